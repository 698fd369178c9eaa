package activities_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

var validContinue = fakeopenai.ReportArgs{Status: "continue", Summary: "Wrote notes.", Evidence: []string{}, NextSteps: []string{"Review notes."}}

func writes(path string) fakeopenai.Script {
	return fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": path, "content": "notes\n"})),
		fakeopenai.Tools(fakeopenai.SubmitReport(validContinue)),
	}}
}

func readsOnly() fakeopenai.Script {
	return fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("list_files", map[string]string{})),
		fakeopenai.Tools(fakeopenai.SubmitReport(validContinue)),
	}}
}

func TestRunRoundWorkspaceChangedWithGitOff(t *testing.T) {
	f := newFixture(t, writes("notes.txt"), context.Background(), nil)
	out, err := f.run(roundInput("off"))
	if err != nil {
		t.Fatal(err)
	}
	if !out.WorkspaceChanged || out.Checkpoint != nil {
		t.Fatalf("a writing round: changed=%v checkpoint=%+v", out.WorkspaceChanged, out.Checkpoint)
	}
	if _, err := os.Stat(filepath.Join(f.cfg.WorkspaceRoot, "off", ".git")); err == nil {
		t.Fatal("git off created a repository")
	}
	g := newFixture(t, readsOnly(), context.Background(), nil)
	if err := os.MkdirAll(filepath.Join(g.cfg.WorkspaceRoot, "off"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.cfg.WorkspaceRoot, "off", "old.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = g.run(roundInput("off"))
	if err != nil {
		t.Fatal(err)
	}
	if out.WorkspaceChanged {
		t.Fatal("a round that only listed files changed the workspace")
	}
}

func TestRunRoundCheckpointsWithGitLocal(t *testing.T) {
	local := func(c *activities.Config) { c.Git.Mode = gitws.ModeLocal }
	f := newFixture(t, writes("notes.txt"), context.Background(), local)
	out, err := f.run(roundInput("repo"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.cfg.WorkspaceRoot, "repo")
	cp := out.Checkpoint
	if cp == nil || !out.WorkspaceChanged {
		t.Fatalf("output = %+v", out)
	}
	if head := testkit.Git(t, dir, "rev-parse", "HEAD"); cp.Commit != head || cp.Parent != testkit.Git(t, dir, "rev-parse", "HEAD^") {
		t.Fatalf("checkpoint %+v, HEAD %s", cp, head)
	}
	if cp.FilesChanged != 1 || cp.Insertions != 1 {
		t.Fatalf("checkpoint stats = %+v", cp)
	}
	if s := testkit.Git(t, dir, "log", "-1", "--format=%s"); s != "ralph: round 2/5 continue: Wrote notes." {
		t.Fatalf("subject = %q", s)
	}
	if v := testkit.Git(t, dir, "log", "-1", "--format=%(trailers:key=Ralph-Session,valueonly)"); v != out.SessionID {
		t.Fatalf("Ralph-Session = %q, want %q", v, out.SessionID)
	}

	// A second round that changes nothing: commit = parent, unchanged.
	g := newFixture(t, readsOnly(), context.Background(), func(c *activities.Config) {
		local(c)
		c.WorkspaceRoot, c.SessionDir = f.cfg.WorkspaceRoot, f.cfg.SessionDir
	})
	in := roundInput("repo")
	in.Round = 3
	out2, err := g.run(in)
	if err != nil {
		t.Fatal(err)
	}
	if out2.WorkspaceChanged || out2.Checkpoint == nil || out2.Checkpoint.Commit != cp.Commit || out2.Checkpoint.Parent != cp.Commit {
		t.Fatalf("an idle round: %+v", out2)
	}
}

func TestRunRoundRejectedPushIsAChildFailure(t *testing.T) {
	base := t.TempDir()
	bare := filepath.Join(base, "remote.git")
	testkit.Git(t, base, "init", "-q", "--bare", "-b", "main", bare)
	other := filepath.Join(base, "other")
	testkit.Git(t, base, "clone", "-q", bare, other)
	testkit.Git(t, other, "commit", "-q", "--allow-empty", "-m", "seed")
	testkit.Git(t, other, "push", "-q", "origin", "HEAD:main")
	testkit.Git(t, other, "push", "-q", "origin", "HEAD:ralph/repo")

	// While the session runs, someone else pushes to the branch.
	script := fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			testkit.Git(t, other, "commit", "-q", "--allow-empty", "-m", "concurrent")
			testkit.Git(t, other, "push", "-q", "origin", "HEAD:ralph/repo")
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "mine.txt", "content": "mine\n"}))
		}
		return fakeopenai.Tools(fakeopenai.SubmitReport(validContinue))
	}}
	f := newFixture(t, script, context.Background(), func(c *activities.Config) {
		c.Git.Mode, c.Git.Remote = gitws.ModeRemote, bare
	})
	_, err := f.run(roundInput("repo"))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != activities.ErrTypeChildFailed || !appErr.NonRetryable() {
		t.Fatalf("err = %v, want a non-retryable %s", err, activities.ErrTypeChildFailed)
	}
	dir := filepath.Join(f.cfg.WorkspaceRoot, "repo")
	local := testkit.Git(t, dir, "rev-parse", "HEAD")
	if !strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("the failure %q does not name the kept commit %s", err, local)
	}
	if testkit.Git(t, dir, "show", local+":mine.txt") != "mine" {
		t.Fatal("the kept commit lacks the round's work")
	}
}

func TestNewRejectsBadGitConfig(t *testing.T) {
	for _, c := range []struct {
		tweak func(*activities.Config)
		want  string
	}{
		{func(c *activities.Config) { c.Git.Mode = gitws.ModeRemote }, "RALPH_GIT_REMOTE"},
		{func(c *activities.Config) { c.Git.Mode, c.Git.Author = gitws.ModeLocal, "nobody" }, "RALPH_GIT_AUTHOR"},
		{func(c *activities.Config) { c.Git.Mode = "sometimes" }, "RALPH_GIT"},
	} {
		cfg := activities.DefaultConfig()
		base := t.TempDir()
		cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(base, "w"), filepath.Join(base, "s")
		cfg.Agent.BaseURL, cfg.Agent.APIKey, cfg.Agent.Model = "http://127.0.0.1:1/v1", "k", "m"
		c.tweak(&cfg)
		if _, err := activities.New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New = %v, want an error naming %s", err, c.want)
		}
	}
}
