package gitws

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// A candidate that failed keeps what its tree held on its ref: the files it
// wrote, changed and deleted, in a commit on the round's base, in the
// workspace repository (and on the remote in remote mode); the workspace is
// untouched. One that wrote nothing still gets its commit.
func TestKeepCandidateKeepsAFailedCandidatesWork(t *testing.T) {
	for _, mode := range []string{ModeLocal, ModeRemote} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			var bare string
			if mode == ModeRemote {
				bare, _ = campaignRemote(t)
			}
			g := newGit(t, mode, bare)
			dir := workspace(t, "ws")
			cp1, r2 := roundOne(t, g, dir)
			base := prepare(t, g, dir, r2).Base
			if base != cp1.Commit {
				t.Fatalf("round 2's base %s, want round 1's checkpoint %s", base, cp1.Commit)
			}
			cands := t.TempDir()
			cdir := filepath.Join(cands, "c1")
			if err := g.StartCandidate(ctx, dir, cdir, base); err != nil {
				t.Fatal(err)
			}
			write(t, cdir, "half/done.go", "package half\n")
			write(t, cdir, "one.txt", "rewritten by the failed candidate\n")
			ref := CandidateRef(r2.WorkflowID, 2, 1)
			commit, err := g.KeepCandidate(ctx, dir, cdir, base, ref, r2, 1, "failed")
			if err != nil {
				t.Fatal(err)
			}
			if got := testkit.Git(t, dir, "rev-parse", ref); got != commit {
				t.Fatalf("ref %s at %q, want %s", ref, got, commit)
			}
			if got := testkit.Git(t, dir, "rev-parse", ref+"^"); got != base {
				t.Fatalf("kept commit's parent %s, want the round's base %s", got, base)
			}
			if got := testkit.Git(t, dir, "show", ref+":half/done.go"); got != "package half" {
				t.Fatalf("half/done.go on the ref = %q", got)
			}
			if got := testkit.Git(t, dir, "show", ref+":one.txt"); got != "rewritten by the failed candidate" {
				t.Fatalf("one.txt on the ref = %q", got)
			}
			if msg := testkit.Git(t, dir, "log", "-1", "--format=%B", ref); !strings.Contains(msg, "candidate 1 failed") ||
				!strings.Contains(msg, TrailerWorkflowID+": "+r2.WorkflowID) {
				t.Fatalf("kept commit's message:\n%s", msg)
			}
			if testkit.Git(t, dir, "rev-parse", "HEAD") != base || exists(dir, "half/done.go") {
				t.Fatal("keeping a candidate touched the workspace")
			}
			if mode == ModeRemote && testkit.Git(t, bare, "rev-parse", ref) != commit {
				t.Fatal("the failed candidate is not kept on the remote")
			}

			idle := filepath.Join(cands, "c2")
			if err := g.StartCandidate(ctx, dir, idle, base); err != nil {
				t.Fatal(err)
			}
			ref2 := CandidateRef(r2.WorkflowID, 2, 2)
			commit2, err := g.KeepCandidate(ctx, dir, idle, base, ref2, r2, 2, "cancelled")
			if err != nil {
				t.Fatal(err)
			}
			if testkit.Git(t, dir, "rev-parse", ref2) != commit2 || testkit.Git(t, dir, "rev-parse", ref2+"^{tree}") != testkit.Git(t, dir, "rev-parse", base+"^{tree}") {
				t.Fatal("a candidate that wrote nothing is not kept as its base's tree")
			}
		})
	}
}
