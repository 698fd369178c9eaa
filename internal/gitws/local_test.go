package gitws

import (
	"context"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"os"
	"strings"
	"testing"
)

func TestLocalInitialisesWithAnEmptyFirstCommit(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	write(t, dir, "existing.txt", "from before git\n")
	p := prepare(t, g, dir, round(1, 1))
	if testkit.Git(t, dir, "rev-parse", "HEAD") != p.Base {
		t.Fatalf("HEAD is not the base %s", p.Base)
	}
	if files := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); files != "" {
		t.Fatalf("the first commit is not empty: %q", files)
	}
	if a := testkit.Git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); a != DefaultAuthor+"|"+DefaultAuthor {
		t.Fatalf("first commit author/committer = %q", a)
	}
	if exists(dir, ".git/hooks") {
		t.Fatal("git init copied a hooks template into the workspace")
	}
	// A file that was there before git became part of round 1's checkpoint.
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "kept the old file"))
	if cp.Parent != p.Base || cp.Commit == p.Base || cp.FilesChanged != 1 || cp.Insertions != 1 {
		t.Fatalf("checkpoint = %+v", cp)
	}
	// A second Prepare leaves an existing repository as it is.
	if again := prepare(t, g, dir, round(2, 1)); again.Base != cp.Commit {
		t.Fatalf("round 2 starts from %s, want %s", again.Base, cp.Commit)
	}
}

func TestCheckpointMessageTrailersAndAuthor(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	cfg := g.Config()
	cfg.Author = "Build Bot <bot@example.com>"
	g, err := New(cfg, t.TempDir()+"/hooks")
	if err != nil {
		t.Fatal(err)
	}
	dir := workspace(t, "ws")
	r := Round{WorkflowID: "fix-tests", Workspace: "ws", Round: 2, MaxRounds: 8, Attempt: 1}
	p := prepare(t, g, dir, r)
	write(t, dir, "a.txt", "one\ntwo\n")
	write(t, dir, "b/c.txt", "three\n")
	long := "Implemented the parser and\nwired it into the CLI so that every subcommand reads the same configuration file"
	cp := checkpoint(t, g, dir, p, r, Handoff{SessionID: "s-123", Status: "continue", Summary: long})

	if testkit.Git(t, dir, "rev-parse", "HEAD") != cp.Commit {
		t.Fatal("the checkpoint is not HEAD")
	}
	subject := testkit.Git(t, dir, "log", "-1", "--format=%s")
	wantPrefix := "ralph: round 2/8 continue: Implemented the parser and wired it"
	if !strings.HasPrefix(subject, wantPrefix) || len([]rune(strings.TrimPrefix(subject, "ralph: round 2/8 continue: "))) != 72 || !strings.HasSuffix(subject, "…") {
		t.Fatalf("subject = %q", subject)
	}
	if body := testkit.Git(t, dir, "log", "-1", "--format=%b"); !strings.Contains(body, "configuration file") {
		t.Fatalf("the cut summary is not kept whole in the body: %q", body)
	}
	trailers := testkit.Git(t, dir, "log", "-1", "--format=%(trailers:only,unfold)")
	for _, want := range []string{"Ralph-Workflow-Id: fix-tests", "Ralph-Round: 2", "Ralph-Session: s-123", "Ralph-Status: continue"} {
		if !strings.Contains(trailers, want) {
			t.Errorf("trailers %q lack %q", trailers, want)
		}
	}
	if who := testkit.Git(t, dir, "log", "-1", "--format=%an <%ae>|%cn <%ce>"); who != "Build Bot <bot@example.com>|Build Bot <bot@example.com>" {
		t.Fatalf("author|committer = %q", who)
	}
	if cp.Parent != p.Base || cp.FilesChanged != 2 || cp.Insertions != 3 || cp.Deletions != 0 {
		t.Fatalf("checkpoint = %+v", cp)
	}
	if parent := testkit.Git(t, dir, "rev-parse", "HEAD^"); parent != p.Base {
		t.Fatalf("git parent %s, want the base %s", parent, p.Base)
	}
}

func TestCheckpointWithoutChangesIsTheParent(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, "f.txt", "x\n")
	first := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "wrote f"))
	p2 := prepare(t, g, dir, round(2, 1))
	cp := checkpoint(t, g, dir, p2, round(2, 1), handoff("continue", "looked around"))
	if cp.Commit != first.Commit || cp.Parent != first.Commit || cp.FilesChanged != 0 {
		t.Fatalf("an unchanged round made %+v, want commit = parent = %s", cp, first.Commit)
	}
	if n := testkit.Git(t, dir, "rev-list", "--count", "HEAD"); n != "2" {
		t.Fatalf("commits = %s, want 2 (empty first commit + round 1)", n)
	}
}

func TestDeletionsAreCommitted(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, "gone.txt", "a\nb\n")
	write(t, dir, "stays.txt", "c\n")
	checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "two files"))
	p2 := prepare(t, g, dir, round(2, 1))
	if err := os.Remove(dir + "/gone.txt"); err != nil {
		t.Fatal(err)
	}
	cp := checkpoint(t, g, dir, p2, round(2, 1), handoff("complete", "removed one"))
	if files := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); files != "stays.txt" {
		t.Fatalf("HEAD holds %q, want only stays.txt", files)
	}
	if cp.FilesChanged != 1 || cp.Deletions != 2 || cp.Insertions != 0 {
		t.Fatalf("checkpoint = %+v", cp)
	}
}

func TestRetriedAttemptSavesLeftoversAndResets(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, ".gitignore", "cache/\n")
	write(t, dir, "tracked.txt", "good\n")
	write(t, dir, "old.txt", "old\n")
	cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "base"))

	// Round 2, attempt 1 is lost mid-way: it left a new file, an edit, a
	// deletion, a staged file and an ignored cache.
	prepare(t, g, dir, round(2, 1))
	write(t, dir, "lost.txt", "half done\n")
	write(t, dir, "tracked.txt", "broken\n")
	write(t, dir, "staged.txt", "staged\n")
	testkit.Git(t, dir, "add", "staged.txt")
	write(t, dir, "cache/blob", "cache\n")
	if err := os.Remove(dir + "/old.txt"); err != nil {
		t.Fatal(err)
	}

	p2 := prepare(t, g, dir, round(2, 2))
	wantRef := "refs/ralph/abandoned/wf-1/round-2-attempt-1"
	if p2.Abandoned != wantRef || p2.AbandonedCommit == "" || p2.Base != cp.Commit {
		t.Fatalf("prepared = %+v", p2)
	}
	if got := testkit.Git(t, dir, "show", wantRef+":lost.txt"); got != "half done" {
		t.Fatalf("abandoned lost.txt = %q", got)
	}
	if got := testkit.Git(t, dir, "show", wantRef+":tracked.txt"); got != "broken" {
		t.Fatalf("abandoned tracked.txt = %q", got)
	}
	if files := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", wantRef); strings.Contains(files, "old.txt") || strings.Contains(files, "cache/") || !strings.Contains(files, "staged.txt") {
		t.Fatalf("abandoned tree = %q", files)
	}
	if parent := testkit.Git(t, dir, "rev-parse", wantRef+"^"); parent != cp.Commit {
		t.Fatalf("abandoned commit's parent %s, want the checkpoint %s", parent, cp.Commit)
	}
	if exists(dir, "lost.txt") || exists(dir, "staged.txt") || !exists(dir, "old.txt") {
		t.Fatal("the work tree was not reset to the last checkpoint")
	}
	if data, _ := os.ReadFile(dir + "/tracked.txt"); string(data) != "good\n" {
		t.Fatalf("tracked.txt = %q after the reset", data)
	}
	if !exists(dir, "cache/blob") {
		t.Fatal("an ignored cache was removed by the reset")
	}
	if st := testkit.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree not clean after the reset: %q", st)
	}
	if testkit.Git(t, dir, "rev-parse", "HEAD") != cp.Commit {
		t.Fatal("HEAD moved")
	}

	// A retry with nothing left behind saves nothing.
	if p3 := prepare(t, g, dir, round(2, 3)); p3.Abandoned != "" {
		t.Fatalf("a clean retry saved %+v", p3)
	}
}

func TestPersonsEditAtAttemptOneIsKept(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, "code.go", "package x\n")
	checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "code"))

	write(t, dir, "HUMAN.md", "a person's note\n")
	p2 := prepare(t, g, dir, round(2, 1))
	if p2.Abandoned != "" || !exists(dir, "HUMAN.md") {
		t.Fatalf("a person's edit was not kept at attempt 1: %+v", p2)
	}
	write(t, dir, "more.go", "package x\n")
	checkpoint(t, g, dir, p2, round(2, 1), handoff("continue", "more"))
	if files := testkit.Git(t, dir, "diff-tree", "-r", "--name-only", "--no-commit-id", "HEAD"); files != "HUMAN.md\nmore.go" {
		t.Fatalf("round 2's commit changes %q, want the person's edit and the round's file", files)
	}
}

func TestUserRepositoryKeepsItsBranch(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	testkit.Git(t, dir, "init", "-q", "-b", "trunk")
	write(t, dir, "README", "mine\n")
	testkit.Git(t, dir, "add", "README")
	testkit.Git(t, dir, "commit", "-q", "-m", "person's first commit")
	mine := testkit.Git(t, dir, "rev-parse", "HEAD")
	p := prepare(t, g, dir, round(1, 1))
	if p.Base != mine {
		t.Fatalf("base = %s, want the person's commit %s", p.Base, mine)
	}
	write(t, dir, "x.txt", "x\n")
	checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "x"))
	if b := testkit.Git(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); b != "trunk" {
		t.Fatalf("branch = %s", b)
	}
	if parent := testkit.Git(t, dir, "rev-parse", "trunk^"); parent != mine {
		t.Fatal("the checkpoint does not follow the person's commit")
	}
}

func TestCancelledStepStops(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Prepare(ctx, dir, round(1, 1)); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("a cancelled prepare returned %v", err)
	}
}

func TestStaleLockLeftByAKilledGitIsRemoved(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, ".git/index.lock", "")
	write(t, dir, "f.txt", "x\n")
	if cp := checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "f")); cp.Commit == p.Base {
		t.Fatal("nothing was committed")
	}
}
