package activities_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// The queue's own refs leave the campaign's repository in the landing
// that spends them, on real git: a lane's landing deletes the refs of
// the lanes before it (landed or discarded), never its own (a lane behind
// may still merge onto it) nor a task branch; a held merge's landing
// deletes its tasks' held refs and leaves another task's (stopped: kept,
// SPEC 39); a landing retried after the delete still answers landed.
func TestMergeTaskLandingDeletesSpentQueueRefs(t *testing.T) {
	f, _ := campaignFixture(t, 1)
	a := taskGo(t, f, "sa", "a.txt", 1)
	b := taskGo(t, f, "sb", "b.txt", 1)
	c := taskGo(t, f, "sc", "c.txt", 1)
	d := taskGo(t, f, "sd", "d.txt", 1)
	repo := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "integration.git")
	refs := func(prefix string) string {
		return gitSetup(t, repo, "for-each-ref", "--format=%(refname)", prefix)
	}
	head0 := gitSetup(t, repo, "rev-parse", "refs/heads/integration")
	lane := func(n string) string { return "refs/ralph/campaigns/camp/lanes/" + n }
	merge := func(task activities.CampaignTask, onto, ontoRef, ref string) activities.MergeTaskOutput {
		out := mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{task}, VerifyCommand: "true",
			Lane: activities.LaneMerge, Onto: onto, OntoRef: ontoRef, HoldRef: ref})
		if out.Outcome != activities.MergeHeld {
			t.Fatalf("lane merge onto %q = %+v", ontoRef, out)
		}
		return out
	}
	land := func(task activities.CampaignTask, tip, on, ref string) activities.MergeTaskOutput {
		out := mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{task}, VerifyCommand: "true",
			HoldRef: ref, Land: tip, LandOn: on})
		if out.Outcome != activities.MergeLanded {
			t.Fatalf("landing %s = %+v", ref, out)
		}
		return out
	}
	// Lane 1 holds a; lane 2 (b onto lane 1) is discarded; lane 3 holds c
	// onto lane 1 again.
	l1 := merge(a, "", "", lane("1"))
	merge(b, l1.Tip, lane("1"), lane("2"))
	l3 := merge(c, l1.Tip, lane("1"), lane("3"))
	branches := refs("refs/heads/")
	land(a, l1.Tip, head0, lane("1"))
	if got, want := refs("refs/ralph/campaigns/camp/lanes/"), lane("1")+"\n"+lane("2")+"\n"+lane("3"); got != want {
		t.Fatalf("after lane 1 landed the lane refs are\n%s\nwant\n%s (nothing before lane 1)", got, want)
	}
	land(c, l3.Tip, l1.Tip, lane("3"))
	if got := refs("refs/ralph/campaigns/camp/lanes/"); got != lane("3") {
		t.Fatalf("after lane 3 landed the lane refs are\n%s\nwant only %s", got, lane("3"))
	}
	land(c, l3.Tip, l1.Tip, lane("3")) // a retry: the branch holds it
	if got := refs("refs/heads/"); got != branches {
		t.Fatalf("the branches changed with the lane refs:\n%s\nwere\n%s", got, branches)
	}

	// Task sd's merge held for approval on its second attempt; its first
	// attempt's held ref (the head moved) and a stopped task's are there.
	held := "refs/ralph/campaigns/camp/held/"
	heldOut := mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{d}, VerifyCommand: "true",
		Hold: true, HoldRef: held + "sd/1-2"})
	if heldOut.Outcome != activities.MergeHeld {
		t.Fatalf("held merge = %+v", heldOut)
	}
	gitSetup(t, repo, "update-ref", held+"sd/1-1", l1.Tip)
	gitSetup(t, repo, "update-ref", held+"stopped/1-1", l1.Tip)
	land(d, heldOut.Tip, heldOut.Head, held+"sd/1-2")
	if got := refs(held); got != held+"stopped/1-1" {
		t.Fatalf("after sd's held merge landed the held refs are\n%s\nwant only the stopped task's", got)
	}
	if got := gitSetup(t, repo, "rev-parse", "refs/heads/integration"); got != heldOut.Tip {
		t.Fatalf("the integration branch is at %s, want the held tip %s", got, heldOut.Tip)
	}
	if !strings.Contains(refs("refs/heads/"), "tasks/sd") {
		t.Fatalf("task sd's branch went with its held refs: %s", refs("refs/heads/"))
	}

	// The campaign's end deletes the last lane's ref, and nothing else.
	branches = refs("refs/heads/")
	if out := mergeStep(t, f, activities.MergeTaskInput{Line: campLine, DropLanes: true}); out.Outcome != activities.MergeDropped {
		t.Fatalf("dropLanes = %+v", out)
	}
	if got := refs("refs/ralph/"); got != held+"stopped/1-1" {
		t.Fatalf("after the campaign's end the queue's refs are\n%s\nwant only the stopped task's held merge", got)
	}
	if got := refs("refs/heads/"); got != branches {
		t.Fatalf("dropLanes changed the branches:\n%s\nwere\n%s", got, branches)
	}
	if _, err := f.env.ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{Line: campLine, DropLanes: true,
		Tasks: []activities.CampaignTask{a}}); err == nil || !strings.Contains(err.Error(), "dropLanes takes no tasks") {
		t.Fatalf("dropLanes with a task: %v, want refused", err)
	}
}

// A scratch clone a killed worker left (a day old, its step long gone) is
// removed when a worker starts; a fresh one, the task workspaces and the
// campaign's repository stay.
func TestWorkerStartRemovesKilledWorkersScratches(t *testing.T) {
	var root string
	dirs := map[string]bool{ // relative to the workspace root: stays?
		"campaigns/camp/lane-7":          false,
		"campaigns/camp/prepare-a":       false,
		"campaigns/camp/merge":           true, // fresh: a live step's
		"campaigns/camp/tasks/a":         true,
		"campaigns/camp/integration.git": true,
	}
	newFixture(t, readsOnly(), context.Background(), func(c *activities.Config) {
		c.Git.Mode, c.Sandbox.Mode = gitws.ModeLocal, sandbox.ModeOff
		root = c.WorkspaceRoot
		for rel := range dirs {
			dir := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			if rel != "campaigns/camp/merge" { // the rest a killed worker's, two days ago
				old := time.Now().Add(-48 * time.Hour)
				if err := os.Chtimes(dir, old, old); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	for rel, stays := range dirs {
		_, err := os.Lstat(filepath.Join(root, rel, "big.bin"))
		if (err == nil) != stays {
			t.Errorf("%s: present %v, want %v", rel, err == nil, stays)
		}
	}
}
