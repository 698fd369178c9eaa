package gitws

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// TestSiftSortsAStackOnTheRemote: on a remote, four tasks' branches: one
// whose commit the integration head holds already (and whose branch was
// deleted since: it is still merged, by its merge commit), one deleted, one
// force-pushed away from its checkpoint, one sound. Sift answers the first
// done, the next two faults naming what is wrong, and the last to merge
// with its fetched head, which MergeStack merges without fetching it again.
func TestSiftSortsAStackOnTheRemote(t *testing.T) {
	ctx := context.Background()
	bare, person := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	scratch := filepath.Join(t.TempDir(), "scratch")
	line := Line{URL: bare, Branch: "ralph/campaigns/c/integration"}
	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	head, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	tasks := []TaskBranch{}
	for _, id := range []string{"landed", "deleted", "moved", "sound"} {
		tb := TaskBranch{ID: id, Repo: bare, Branch: "ralph/campaigns/c/tasks/" + id, Go: 1}
		tb.Commit = taskCommit(t, person, tb.Branch, head, map[string]string{id + ".txt": id + "\n"})
		tasks = append(tasks, tb)
	}
	tip, merges, conflict, err := g.MergeStack(ctx, scratch, "c", head, tasks[:1])
	if err != nil || conflict != nil {
		t.Fatalf("merging landed: %v %+v", err, conflict)
	}
	if err := g.Land(ctx, scratch, line, tip, head); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, bare, "branch", "-D", tasks[0].Branch, tasks[1].Branch)
	moved := taskCommit(t, person, "elsewhere", head, map[string]string{"other.txt": "other\n"})
	testkit.Git(t, person, "push", "-q", "-f", "origin", moved+":refs/heads/"+tasks[2].Branch)

	if err := g.Scratch(ctx, scratch); err != nil {
		t.Fatal(err)
	}
	now, err := g.Integration(ctx, scratch, line)
	if err != nil {
		t.Fatal(err)
	}
	done, rest, faults, err := g.Sift(ctx, scratch, now, tasks)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("done %+v; rest %d; faults %+v", done, len(rest), faults)
	if len(done) != 1 || done[0].Task != "landed" || !done[0].Already || done[0].Commit != merges[0].Commit {
		t.Fatalf("done %+v, want landed merged by %s", done, merges[0].Commit)
	}
	if len(faults) != 2 || faults[0].Task != "deleted" || !strings.Contains(faults[0].Reason, "tasks/deleted is missing") ||
		faults[1].Task != "moved" || !strings.Contains(faults[1].Reason, "is at "+shortID(moved)) ||
		!strings.Contains(faults[1].Reason, "no longer holds the loop's last checkpoint "+shortID(tasks[2].Commit)) {
		t.Fatalf("faults %+v", faults)
	}
	if len(rest) != 1 || rest[0].ID != "sound" || rest[0].Head != tasks[3].Commit {
		t.Fatalf("rest %+v, want sound with its fetched head", rest)
	}
	// MergeStack takes the head Sift fetched: the branch is not asked for
	// again (deleted now, it still merges from the scratch clone).
	testkit.Git(t, bare, "branch", "-D", tasks[3].Branch)
	tip, merges, conflict, err = g.MergeStack(ctx, scratch, "c", now, rest)
	if err != nil || conflict != nil || len(merges) != 1 || merges[0].Already {
		t.Fatalf("merging the rest: %v %+v %+v", err, conflict, merges)
	}
	if files := testkit.Git(t, scratch, "ls-tree", "--name-only", tip); files != "README\nlanded.txt\nsound.txt" {
		t.Fatalf("the stack's tip holds %q", files)
	}
}
