package adversarial

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Finding 6: a command filled the worker's disk (fallocate -l 6G under a
// 256 MB memory limit succeeded).
func TestWorkspaceSizeIsBounded(t *testing.T) {
	j := New(t, func(c *sandbox.Config) { c.WorkspaceMaxMB = 32 })
	res := j.Run("fallocate -l 256M big || dd if=/dev/zero of=big bs=1M count=256 status=none; sleep 20; echo survived")
	if strings.Contains(res.Output, "survived") || !strings.Contains(res.DiskKill, "RALPH_WORKSPACE_MAX_MB (32 MB)") {
		t.Errorf("the command was not killed at the workspace bound: %q\n%s", res.DiskKill, res.Output)
	}
	if !strings.Contains(res.Output, "the workspace uses 256 MB") {
		t.Errorf("the tool result does not name the size now:\n%s", res.Output)
	}
}

// Finding 6: the free space the worker needs is kept.
func TestMinimumFreeDiskIsKept(t *testing.T) {
	var st syscall.Statfs_t
	base := t.TempDir()
	if err := syscall.Statfs(base, &st); err != nil {
		t.Fatal(err)
	}
	freeMB := int(int64(st.Bavail) * int64(st.Bsize) >> 20)
	// The bound sits just below the free space now: one command writing
	// 128 MB passes it, whatever the disk.
	j := New(t, func(c *sandbox.Config) { c.MinFreeMB = freeMB - 32 })
	res := j.Run("dd if=/dev/zero of=fill bs=1M count=128 status=none; sync; sleep 20; echo survived")
	if strings.Contains(res.Output, "survived") || !strings.Contains(res.DiskKill, "RALPH_MIN_FREE_MB") {
		t.Errorf("the command was not killed at the free-space bound: %q\n%s", res.DiskKill, res.Output)
	}
	_ = os.Remove(filepath.Join(j.Dir, "fill"))
}
