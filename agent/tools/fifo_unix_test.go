//go:build unix

package tools

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Opening a FIFO blocks until the other end is opened, which would hang the
// round; file tools refuse anything but regular files and directories.
func TestFileToolsRefuseFIFO(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, call(t, w, "write_file", map[string]any{"path": "fifo", "content": "x"}), "not a regular file")
	mustFail(t, call(t, w, "read_file", map[string]any{"path": "fifo"}), "not a regular file")
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "fifo", "old_string": "a", "new_string": "b"}), "not a regular file")
	writeTestFile(t, filepath.Join(dir, "a.txt"), "needle\n")
	if out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle"})); !strings.HasPrefix(out, "a.txt:1:") {
		t.Fatalf("search with a FIFO present: %q", out)
	}
}
