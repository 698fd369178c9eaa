package gitws

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// Two candidates of round 2 start from the workspace's checkpoint plus a
// person's uncommitted edit, each in its own repository; both are kept on
// refs, the chosen one becomes the workspace and its ref goes.
func TestCandidatesLocal(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	write(t, dir, "person.txt", "edited between rounds\n")
	base, err := g.CommitEdits(ctx, dir, r2)
	if err != nil || base == p.Base {
		t.Fatalf("commit edits: %s (%v), want a commit past %s", base, err, p.Base)
	}
	cands := filepath.Join(t.TempDir(), "candidates")
	var commits []string
	for k, content := range []string{"first\n", "second\n"} {
		cdir := filepath.Join(cands, string(rune('a'+k)))
		if err := g.StartCandidate(ctx, dir, cdir, base); err != nil {
			t.Fatal(err)
		}
		if !exists(cdir, "person.txt") || !exists(cdir, "one.txt") {
			t.Fatalf("candidate %d does not start from the base", k+1)
		}
		if _, err := os.Stat(filepath.Join(cdir, ".git", "objects", "info", "alternates")); err == nil {
			t.Fatalf("candidate %d borrows the workspace's objects", k+1)
		}
		if cfg, _ := os.ReadFile(filepath.Join(cdir, ".git", "config")); strings.Contains(string(cfg), dir) {
			t.Fatalf("candidate %d's config names the workspace's path:\n%s", k+1, cfg)
		}
		write(t, cdir, "answer.txt", content)
		ref := CandidateRef(r2.WorkflowID, 2, k+1)
		cp, _, err := g.FinishCandidate(ctx, dir, cdir, base, ref, r2, handoff("continue", "candidate"))
		if err != nil {
			t.Fatal(err)
		}
		if cp.Parent != base || cp.Insertions != 1 || testkit.Git(t, dir, "rev-parse", ref) != cp.Commit {
			t.Fatalf("candidate %d: %+v, ref %s", k+1, cp, testkit.Git(t, dir, "rev-parse", ref))
		}
		commits = append(commits, cp.Commit)
	}
	if testkit.Git(t, dir, "rev-parse", "HEAD") != base || exists(dir, "answer.txt") {
		t.Fatal("a candidate touched the workspace")
	}
	chosen := CandidateRef(r2.WorkflowID, 2, 2)
	for range 2 { // adopting again changes nothing
		if err := g.Adopt(ctx, dir, r2, base, commits[1], chosen); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "answer.txt"))
	if testkit.Git(t, dir, "rev-parse", "HEAD") != commits[1] || string(got) != "second\n" {
		t.Fatalf("workspace at %s holding %q, want candidate 2", testkit.Git(t, dir, "rev-parse", "HEAD"), got)
	}
	refs := testkit.Git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", CandidateRefPrefix)
	if want := CandidateRef(r2.WorkflowID, 2, 1) + " " + commits[0]; refs != want {
		t.Fatalf("candidate refs %q, want only the other one: %q", refs, want)
	}
	if err := g.Adopt(ctx, dir, r2, base, commits[0], CandidateRef(r2.WorkflowID, 2, 1)); !errors.Is(err, ErrWorkspaceMoved) {
		t.Fatalf("adopting a second candidate: %v, want ErrWorkspaceMoved", err)
	}
}

// In remote mode candidates are kept on the remote and the adopted one
// moves the remote branch.
func TestCandidatesRemote(t *testing.T) {
	ctx := context.Background()
	bare, _ := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	cdir := filepath.Join(t.TempDir(), "cand")
	if err := g.StartCandidate(ctx, dir, cdir, p.Base); err != nil {
		t.Fatal(err)
	}
	write(t, cdir, "x.txt", "x\n")
	ref := CandidateRef("wf-1", 1, 1)
	cp, _, err := g.FinishCandidate(ctx, dir, cdir, p.Base, ref, round(1, 1), handoff("continue", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if testkit.Git(t, bare, "rev-parse", ref) != cp.Commit {
		t.Fatal("the candidate is not kept on the remote")
	}
	if err := g.Adopt(ctx, dir, round(1, 1), p.Base, cp.Commit, ref); err != nil {
		t.Fatal(err)
	}
	if testkit.Git(t, bare, "rev-parse", Branch("ws")) != cp.Commit {
		t.Fatal("the remote branch did not move to the adopted candidate")
	}
	if out := testkit.Git(t, bare, "for-each-ref", CandidateRefPrefix); out != "" {
		t.Fatalf("the adopted candidate's ref is still on the remote: %s", out)
	}
}
