package gitws

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// newGit returns a Git for mode with its own empty hooks directory.
func newGit(t *testing.T, mode, remote string) *Git {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Mode, cfg.Remote = mode, remote
	g, err := New(cfg, filepath.Join(t.TempDir(), "empty-hooks"))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, rel))
	return err == nil
}

// workspace makes <tmp>/root/<name> and returns it.
func workspace(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func round(n, attempt int) Round {
	return Round{WorkflowID: "wf-1", Workspace: "ws", Round: n, MaxRounds: 5, Attempt: attempt}
}

func handoff(status, summary string) Handoff {
	return Handoff{SessionID: "sess-" + status, Status: status, Summary: summary}
}

// prepare and checkpoint fail the test on error.
func prepare(t *testing.T, g *Git, dir string, r Round) Prepared {
	t.Helper()
	p, err := g.Prepare(context.Background(), dir, r)
	if err != nil {
		t.Fatalf("prepare round %d attempt %d: %v", r.Round, r.Attempt, err)
	}
	return p
}

func checkpoint(t *testing.T, g *Git, dir string, p Prepared, r Round, h Handoff) Checkpoint {
	t.Helper()
	cp, _, err := g.Checkpoint(context.Background(), dir, p, r, h)
	if err != nil {
		t.Fatalf("checkpoint round %d: %v", r.Round, err)
	}
	return cp
}

// roundOne is a first round that wrote one.txt, checkpointed, and round 2's
// input after it (its checkpoint set).
func roundOne(t *testing.T, g *Git, dir string) (Checkpoint, Round) {
	t.Helper()
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, "one.txt", "round 1\n")
	cp1 := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "one"))
	r2 := round(2, 1)
	r2.Checkpoint = cp1.Commit
	return cp1, r2
}

// commitAs commits rel (written with content) as someone other than the
// loop, with no round trailer, and returns the commit.
func commitAs(t *testing.T, dir, who, rel, content string) string {
	t.Helper()
	write(t, dir, rel, content)
	testkit.Git(t, dir, "add", rel)
	testkit.Git(t, dir, "-c", "user.name="+who, "-c", "user.email="+who+"@localhost", "commit", "-q", "-m", "a commit by "+who)
	return testkit.Git(t, dir, "rev-parse", "HEAD")
}
