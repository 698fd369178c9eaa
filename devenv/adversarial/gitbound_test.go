package adversarial

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Section 38: from the model's side, a conversion attribute over a 256 MB
// sparse file (no block on disk, so the disk bound does not see it) made
// the worker's git take GBs. The round's checkpoint, the worker's git as
// root outside the jail, keeps every git child under RALPH_GIT_MEMORY_MB,
// refuses the tree past RALPH_WORKSPACE_MAX_MB at its apparent size,
// commits nothing and writes nothing of it out.
func TestASparseBlobUnderAConversionAttributeIsBounded(t *testing.T) {
	const memoryMB = 64
	j := New(t, func(c *sandbox.Config) { c.ProtectGit, c.WorkspaceMaxMB = true, 128 })
	cfg := gitws.DefaultConfig()
	cfg.Mode, cfg.MemoryMB = gitws.ModeLocal, memoryMB
	cfg.MaxTreeBytes, cfg.MaxTreeFiles = j.Sandbox.WorkspaceBounds()
	g, err := gitws.New(cfg, filepath.Join(j.Session, "git-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	if enforced, why := g.Bound(); !strings.Contains(enforced, "memory 64 MB") {
		t.Fatalf("no memory bound on the worker's git here (%q): %s", enforced, why)
	}
	ctx := context.Background()
	r := gitws.Round{WorkflowID: "wf", Workspace: "ws", Round: 1, MaxRounds: 3, Attempt: 1}
	p, err := g.Prepare(ctx, j.Dir, r)
	if err != nil {
		t.Fatal(err)
	}
	res := j.Run("printf '*.bin working-tree-encoding=UTF-16LE\\n' > .gitattributes && truncate -s 256M big.bin && echo written")
	if !strings.Contains(res.Output, "written") || res.DiskKill != "" {
		t.Fatalf("the model's command did not write the sparse file: %q\n%s", res.DiskKill, res.Output)
	}
	_, _, err = g.Checkpoint(ctx, j.Dir, p, r, gitws.Handoff{SessionID: "s", Status: "continue", Summary: "sparse"})
	if !gitws.TreeFault(err) || !strings.Contains(err.Error(), "RALPH_") {
		t.Fatalf("checkpoint err = %v, want the tree refused or git killed, naming the bound", err)
	}
	if peak := g.PeakMemoryBytes(); peak <= 0 || peak > memoryMB<<20 {
		t.Fatalf("the worker's git children peaked at %d bytes, want within (0, %d MB]", peak, memoryMB)
	}
	if head := testkit.Git(t, j.Dir, "rev-parse", "HEAD"); head != p.Base {
		t.Fatalf("HEAD = %s, want the base %s: nothing committed", head, p.Base)
	}
	if used := allocated(t, j.Root); used > 16<<20 {
		t.Fatalf("%d MB were written under the workspace root", used>>20)
	}
}

// allocated is the disk space the files under dir take (blocks, not sizes).
func allocated(t *testing.T, dir string) int64 {
	t.Helper()
	var sum int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			sum += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
