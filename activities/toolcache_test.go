package activities_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// A merge verify's writes to its tool caches become the campaign line's
// cache only when its merge lands: a red verify's never do, and the next
// verify starts from what the landed one wrote (SPEC 41, warm verifies).
func TestMergeVerifyCacheOnlyFromLandedMerges(t *testing.T) {
	f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
	in, _ := gamedMerge(t, f, nil)
	lineDir := filepath.Join(f.cfg.SessionDir, "homes", ".toolcache", "lines", "campaign-c1")
	mark := func(name string) string { return lineFile(lineDir, filepath.Join("xdg", name)) }

	// Red: the verify writes its cache, then fails.
	in.VerifyCommand = `echo red > "$XDG_CACHE_HOME/red-mark"; exit 1`
	if out := f.merge(in); out.Outcome != activities.MergeRed {
		t.Fatalf("want a red merge: %+v", out)
	}
	if _, err := os.Stat(lineDir); !os.IsNotExist(err) {
		t.Fatalf("a red merge's verify wrote the line: %v", err)
	}

	// Landed: what the verify wrote is the line's now; the next verify reads it.
	in.VerifyCommand = `test ! -e "$XDG_CACHE_HOME/red-mark" && echo landed > "$XDG_CACHE_HOME/landed-mark"`
	out := f.merge(in)
	if out.Outcome != activities.MergeLanded {
		t.Fatalf("want a landed merge: %+v", out)
	}
	if b, err := os.ReadFile(mark("landed-mark")); err != nil || string(b) != "landed\n" {
		t.Fatalf("the landed merge's cache is not the line's: %q, %v", b, err)
	}
	if _, err := os.Stat(mark("red-mark")); !os.IsNotExist(err) {
		t.Fatalf("the red merge's write reached the line: %v", err)
	}

	// A second task's merge verify starts from the landed cache.
	task := activities.CampaignTask{ID: "t2", Workspace: activities.TaskWorkspace("c1", "t2"), Go: 1}
	if _, err := f.env.ExecuteActivity(activities.PrepareTaskName, activities.PrepareTaskInput{Line: in.Line, Task: task}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(f.cfg.WorkspaceRoot, task.Workspace)
	writeFile(t, filepath.Join(dir, "second.txt"), "two\n")
	testkit.Git(t, dir, "add", "second.txt")
	testkit.Git(t, dir, "commit", "-q", "-m", "second")
	task.Commit = testkit.Git(t, dir, "rev-parse", "HEAD")
	in.Tasks = []activities.CampaignTask{task}
	in.VerifyCommand = `grep -q landed "$XDG_CACHE_HOME/landed-mark"`
	if out := f.merge(in); out.Outcome != activities.MergeLanded {
		t.Fatalf("the next merge verify did not start from the landed cache: %+v", out.Verification)
	}
}

func TestToolCacheLine(t *testing.T) {
	for workspace, want := range map[string]string{
		activities.TaskWorkspace("c1", "t1"): "campaign-c1",
		"campaigns/c1/merge":                 "runs",
		"my-run":                             "runs",
		"campaigns/c1/tasks/t1/deeper":       "runs",
	} {
		if got := activities.ToolCacheLine(workspace); got != want {
			t.Errorf("ToolCacheLine(%q) = %q, want %q", workspace, got, want)
		}
	}
}

// A lane's verify starts warm like any merge verify; what a passing one
// wrote becomes the campaign line's cache only when the lane lands (in
// its own step), a red one's never.
func TestLaneVerifyCacheOnlyWhenTheLaneLands(t *testing.T) {
	f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
	in, head := gamedMerge(t, f, nil)
	lineDir := filepath.Join(f.cfg.SessionDir, "homes", ".toolcache", "lines", "campaign-c1")
	mark := func(name string) string { return lineFile(lineDir, filepath.Join("xdg", name)) }
	ref := "refs/ralph/campaigns/c1/lanes/1"

	merge := in
	merge.Lane, merge.HoldRef = activities.LaneMerge, ref
	lane := f.merge(merge)
	if lane.Outcome != activities.MergeHeld {
		t.Fatalf("the lane's merge: %+v", lane)
	}
	verify := func(command string) activities.MergeTaskOutput {
		v := in
		v.Lane, v.HoldRef, v.Tip, v.Onto, v.VerifyCommand = activities.LaneVerify, ref, lane.Tip, head, command
		return f.merge(v)
	}
	if out := verify(`echo red > "$XDG_CACHE_HOME/red-mark"; exit 1`); out.Outcome != activities.MergeRed {
		t.Fatalf("want a red lane: %+v", out)
	}
	if out := verify(`test ! -e "$XDG_CACHE_HOME/red-mark" && echo landed > "$XDG_CACHE_HOME/landed-mark"`); out.Outcome != activities.MergeHeld {
		t.Fatalf("want a passing lane: %+v", out.Verification)
	}
	if _, err := os.Stat(lineDir); !os.IsNotExist(err) {
		t.Fatalf("a lane's verify wrote the line before the lane landed: %v", err)
	}
	land := in
	land.HoldRef, land.Land, land.LandOn = ref, lane.Tip, head
	if out := f.merge(land); out.Outcome != activities.MergeLanded {
		t.Fatalf("the lane's landing: %+v", out)
	}
	if b, err := os.ReadFile(mark("landed-mark")); err != nil || string(b) != "landed\n" {
		t.Fatalf("the landed lane's cache is not the line's: %q, %v", b, err)
	}
	if _, err := os.Stat(mark("red-mark")); !os.IsNotExist(err) {
		t.Fatalf("the red lane's write reached the line: %v", err)
	}
}

// A passing lane verify's cache copy waits on its worker for the lane's
// landing; a lane that never lands (discarded, then the campaign ended)
// leaves no copy on disk once the campaign's end step ran, nor its ref.
func TestDiscardedLaneCacheGoesWithTheCampaign(t *testing.T) {
	f := protectedFixture(t, fakeopenai.Script{}, protection{mode: sandbox.ModeBwrap})
	in, head := gamedMerge(t, f, nil)
	work := filepath.Join(f.cfg.SessionDir, "homes", ".toolcache", "work")
	ref := "refs/ralph/campaigns/c1/lanes/1"
	merge := in
	merge.Lane, merge.HoldRef = activities.LaneMerge, ref
	lane := f.merge(merge)
	if lane.Outcome != activities.MergeHeld {
		t.Fatalf("the lane's merge: %+v", lane)
	}
	v := in
	v.Lane, v.HoldRef, v.Tip, v.Onto, v.VerifyCommand = activities.LaneVerify, ref, lane.Tip, head, `head -c 1000000 /dev/zero > "$XDG_CACHE_HOME/big"`
	if out := f.merge(v); out.Outcome != activities.MergeHeld {
		t.Fatalf("want a passing lane: %+v", out.Verification)
	}
	copies := func() int {
		entries, err := os.ReadDir(work)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	if n := copies(); n != 1 {
		t.Fatalf("%d copies wait in %s after a passing lane verify, want its one", n, work)
	}
	if out := f.merge(activities.MergeTaskInput{Line: in.Line, DropLanes: true}); out.Outcome != activities.MergeDropped {
		t.Fatalf("the campaign's end step: %+v", out)
	}
	if n := copies(); n != 0 {
		t.Fatalf("%d copies left in %s after the campaign ended", n, work)
	}
}

// lineFile is rel in the newest layer of the tool cache line at lineDir
// that holds it (a path that does not exist when none does).
func lineFile(lineDir, rel string) string {
	found, _ := filepath.Glob(filepath.Join(lineDir, "*", rel))
	if len(found) == 0 {
		return filepath.Join(lineDir, "none", rel)
	}
	return found[len(found)-1]
}
