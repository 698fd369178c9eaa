//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Under bubblewrap a protected file that exists at the start of the round
// is mounted read-only: a command can neither change, delete nor rename it,
// while the rest of the workspace stays writable.
func TestProtectedFilesReadOnlyUnderBwrap(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{})
	f.w.Close()
	test := filepath.Join(f.dir, "tests", "a_test.sh")
	if err := os.MkdirAll(filepath.Dir(test), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, []byte("exit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := f.w.sb
	w, err := OpenWorkspace(f.dir, DefaultLimits(), WithSandbox(sb), WithProtected(mustProtected(t, []string{"tests/**"})))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SnapshotProtected(); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		"echo 'exit 0' > tests/a_test.sh", "rm -f tests/a_test.sh", "mv tests/a_test.sh gone.sh",
		"sed -i s/1/0/ tests/a_test.sh", "truncate -s 0 tests/a_test.sh",
	} {
		out := mustOK(t, call(t, w, "run_command", map[string]any{"command": cmd}))
		if strings.HasPrefix(out, "exit code: 0") {
			t.Errorf("%q succeeded on a protected file: %s", cmd, out)
		}
	}
	if data, _ := os.ReadFile(test); string(data) != "exit 1\n" {
		t.Fatalf("protected file changed under bwrap: %q", data)
	}
	out := mustOK(t, call(t, w, "run_command", map[string]any{"command": "echo ok > src.txt && cat src.txt"}))
	if out != "exit code: 0\nok\n" {
		t.Fatalf("the rest of the workspace is not writable: %q", out)
	}
}

// A ReadOnly (reviewer's) workspace offers no writing tool, and under
// bubblewrap its commands cannot write anywhere in the workspace.
func TestReviewWorkspaceReadOnlyUnderBwrap(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{})
	if err := os.WriteFile(filepath.Join(f.dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := OpenWorkspace(f.dir, DefaultLimits(), WithSandbox(f.w.sb), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var names []string
	for _, tl := range w.Tools() {
		names = append(names, tl.Name())
	}
	if want := []string{"list_files", "read_file", "search_files", "run_command"}; !slices.Equal(names, want) {
		t.Fatalf("reviewer tools %q, want %q", names, want)
	}
	for _, cmd := range []string{"echo x > new.txt", "echo x >> main.go", "rm main.go", "mkdir d", "mv main.go m.go", "touch main.go"} {
		out := mustOK(t, call(t, w, "run_command", map[string]any{"command": cmd}))
		if strings.HasPrefix(out, "exit code: 0") {
			t.Errorf("%q succeeded in the reviewer's workspace: %s", cmd, out)
		}
	}
	entries, _ := os.ReadDir(f.dir)
	if len(entries) != 1 || entries[0].Name() != "main.go" {
		t.Fatalf("workspace changed: %v", entries)
	}
	if data, _ := os.ReadFile(filepath.Join(f.dir, "main.go")); string(data) != "package main\n" {
		t.Fatalf("main.go changed: %q", data)
	}
	// Reading and running read-only commands still work; /tmp stays writable.
	out := mustOK(t, call(t, w, "run_command", map[string]any{"command": "cat main.go && echo t > /tmp/t && cat /tmp/t"}))
	if out != "exit code: 0\npackage main\nt\n" {
		t.Fatalf("read-only command: %q", out)
	}
}
