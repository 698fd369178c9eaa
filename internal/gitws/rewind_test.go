package gitws

import (
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// A rewound run's next round gets the checkpoint the run went back to: the
// work tree is restored to it, and the later rounds' commits and the
// uncommitted changes are saved on rewind-<n> refs, numbered per rewind.
func TestRewindRestoresTheCheckpointAndSavesTheRest(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	cp1, r2 := roundOne(t, g, dir)
	p := prepare(t, g, dir, r2)
	if p.Rewound != "" {
		t.Fatalf("an ordinary round 2 was taken for a rewind: %+v", p)
	}
	write(t, dir, "two.txt", "round 2\n")
	cp2 := checkpoint(t, g, dir, p, r2, handoff("continue", "two"))
	write(t, dir, "wip.txt", "uncommitted\n")

	// The run was reset to just after round 1: round 2 runs again with
	// round 1's checkpoint.
	p = prepare(t, g, dir, r2)
	want := "refs/ralph/abandoned/wf-1/rewind-1"
	if p.Rewound != want || p.Base != cp1.Commit || testkit.Git(t, dir, "rev-parse", "HEAD") != cp1.Commit {
		t.Fatalf("prepared = %+v, HEAD %s, want rewound to %s", p, testkit.Git(t, dir, "rev-parse", "HEAD"), cp1.Commit)
	}
	if exists(dir, "two.txt") || exists(dir, "wip.txt") || !exists(dir, "one.txt") {
		t.Fatal("the work tree is not round 1's checkpoint")
	}
	if got := testkit.Git(t, dir, "show", want+":wip.txt"); got != "uncommitted" {
		t.Fatalf("saved wip.txt = %q", got)
	}
	if parent := testkit.Git(t, dir, "rev-parse", want+"^"); parent != cp2.Commit {
		t.Fatalf("the saved commit's parent is %s, want round 2's checkpoint %s", parent, cp2.Commit)
	}

	// A second rewind gets the next number; HEAD = the checkpoint is no rewind.
	write(t, dir, "two.txt", "round 2 again\n")
	cp2b := checkpoint(t, g, dir, p, r2, handoff("continue", "two again"))
	if p = prepare(t, g, dir, r2); p.Rewound != "refs/ralph/abandoned/wf-1/rewind-2" ||
		testkit.Git(t, dir, "rev-parse", "refs/ralph/abandoned/wf-1/rewind-2") != cp2b.Commit {
		t.Fatalf("second rewind: %+v", p)
	}
	if p = prepare(t, g, dir, r2); p.Rewound != "" {
		t.Fatalf("HEAD at the checkpoint was taken for a rewind: %+v", p)
	}
}

// A person's own commit on top of the checkpoint is not a rewind: nothing
// of this workflow's later rounds is in it, so it stays.
func TestPersonsCommitIsNotARewind(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	_, r2 := roundOne(t, g, dir)
	commitAs(t, dir, "person", "HUMAN.md", "note\n")
	if p := prepare(t, g, dir, r2); p.Rewound != "" || !exists(dir, "HUMAN.md") {
		t.Fatalf("a person's commit was rewound: %+v", p)
	}
	if refs := testkit.Git(t, dir, "for-each-ref", "refs/ralph/"); strings.Contains(refs, "rewind") {
		t.Fatalf("refs = %q", refs)
	}
}

// A rewind to the round before the running one: HEAD is already that
// round's checkpoint, but the killed round left a commit of its own (no
// round trailer) and an uncommitted file. Told it was rewound, the next
// round's first attempt abandons both onto the rewind ref; a retry of it
// (attempt 2) does not rewind again.
func TestRewindToThePreviousRoundRemovesItsPartialWork(t *testing.T) {
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	cp1, r2 := roundOne(t, g, dir)
	prepare(t, g, dir, r2)
	partial := commitAs(t, dir, "model", "partial.txt", "committed by the model\n")
	write(t, dir, "wip.txt", "uncommitted\n")

	r2.Rewound = true
	p := prepare(t, g, dir, r2)
	want := "refs/ralph/abandoned/wf-1/rewind-1"
	if p.Rewound != want || testkit.Git(t, dir, "rev-parse", "HEAD") != cp1.Commit || exists(dir, "partial.txt") || exists(dir, "wip.txt") {
		t.Fatalf("prepared = %+v; HEAD %s, want round 1's checkpoint %s and a clean tree", p, testkit.Git(t, dir, "rev-parse", "HEAD"), cp1.Commit)
	}
	if got := testkit.Git(t, dir, "show", want+":wip.txt"); got != "uncommitted" {
		t.Fatalf("saved wip.txt = %q", got)
	}
	if parent := testkit.Git(t, dir, "rev-parse", want+"^"); parent != partial {
		t.Fatalf("the saved commit's parent is %s, want the model's commit %s", parent, partial)
	}
	// Rewound at a clean checkpoint: nothing to abandon, no ref.
	if p = prepare(t, g, dir, r2); p.Rewound != "" {
		t.Fatalf("a clean checkpoint was rewound again: %+v", p)
	}
	write(t, dir, "attempt1.txt", "left by attempt 1\n")
	retry := r2
	retry.Attempt = 2
	if p = prepare(t, g, dir, retry); p.Rewound != "" {
		t.Fatalf("a retry of the rewound round rewound again: %+v", p)
	}
}
