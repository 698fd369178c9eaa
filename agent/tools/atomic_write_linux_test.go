//go:build linux

package tools

import (
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFailedWriteLeavesTheFileAlone makes the write itself fail half-way
// (a file size limit: the kernel refuses bytes past it) and checks that the
// old content is still there in full and no temporary file remains.
func TestFailedWriteLeavesTheFileAlone(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	p := filepath.Join(dir, "keep.txt")
	old := strings.Repeat("old line\n", 100)
	writeTestFile(t, p, old)

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	signal.Ignore(syscall.SIGXFSZ) // else the kernel kills the process
	t.Cleanup(func() { signal.Reset(syscall.SIGXFSZ) })
	small := lim
	small.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Fatal(err)
	}
	writeRes := call(t, w, "write_file", map[string]any{"path": "keep.txt", "content": strings.Repeat("new line\n", 2000)})
	editRes := call(t, w, "edit_file", map[string]any{"path": "keep.txt", "old_string": "old line\n", "new_string": strings.Repeat("x", 100), "replace_all": true})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	mustFail(t, writeRes, "writing a temporary file beside it: file too large")
	mustFail(t, editRes, "writing a temporary file beside it: file too large")
	if strings.Contains(writeRes.Output+editRes.Output, dir) {
		t.Errorf("failures name the workspace's absolute path: %s %s", writeRes.Output, editRes.Output)
	}
	if got := readTestFile(t, p); got != old {
		t.Fatalf("file changed to %d bytes after failed writes", len(got))
	}
	assertNoTempFiles(t, dir)
}
