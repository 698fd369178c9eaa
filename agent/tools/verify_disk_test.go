package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// A verify command (ExecFreshHome) does not start on a workspace already
// past RALPH_WORKSPACE_MAX_MB: it fails naming the bound and the size, and
// nothing it would have written is written.
func TestVerifyDoesNotStartPastTheWorkspaceBound(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeOff, sandbox.Config{WorkspaceMaxMB: 8})
	if err := os.WriteFile(filepath.Join(f.dir, "fill"), make([]byte, 12<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := f.w.ExecFreshHome(context.Background(), "echo ran > ran.txt", 10*time.Second, 4000)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.HasPrefix(res.DiskKill, "not started: the workspace uses 12 MB, over RALPH_WORKSPACE_MAX_MB (8 MB)") ||
		!strings.Contains(res.Output, res.DiskKill) {
		t.Fatalf("verify result = %+v, want it not started at the workspace bound", res)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "ran.txt")); !os.IsNotExist(err) {
		t.Fatalf("the verify command ran: %v", err)
	}
	// Within the bound it runs.
	if err := os.Remove(filepath.Join(f.dir, "fill")); err != nil {
		t.Fatal(err)
	}
	if res, err := f.w.ExecFreshHome(context.Background(), "echo ran > ran.txt", 10*time.Second, 4000); err != nil || res.ExitCode != 0 {
		t.Fatalf("verify within the bound = %+v, %v", res, err)
	}
}
