package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// benchRun runs one tool call per iteration and fails on any failure.
func benchRun(b *testing.B, w *Workspace, name, args string) {
	b.Helper()
	var tool Tool
	for _, tl := range w.Tools() {
		if tl.Name() == name {
			tool = tl
		}
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := tool.Run(ctx, json.RawMessage(args))
		if err != nil || res.Failed {
			b.Fatalf("%s(%s): %v %s", name, args, err, res.Output)
		}
	}
}

// The ignore fixture: 3,000 git-ignored files under node_modules/ beside a
// small source tree. Listing and searching the root must cost about what
// the source tree costs, not what node_modules would.
func BenchmarkListFilesIgnoredTree(b *testing.B) {
	w, _ := ignoreFixture(b)
	benchRun(b, w, "list_files", `{}`)
}

func BenchmarkSearchFilesIgnoredTree(b *testing.B) {
	w, _ := ignoreFixture(b)
	benchRun(b, w, "search_files", `{"pattern":"needle","context":2}`)
}

// For comparison: the same search over node_modules named on purpose.
func BenchmarkSearchFilesNodeModules(b *testing.B) {
	w, _ := ignoreFixture(b)
	benchRun(b, w, "search_files", `{"pattern":"needle","path":"node_modules"}`)
}

// An atomic write: temporary file, fsync, rename.
func BenchmarkWriteFile64KiB(b *testing.B) {
	w, _ := newTestWorkspace(b, DefaultLimits())
	args, _ := json.Marshal(map[string]string{"path": "f.txt", "content": strings.Repeat("x", 64*1024)})
	benchRun(b, w, "write_file", string(args))
}
