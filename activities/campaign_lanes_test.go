package activities_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
)

// mergeStep runs MergeTask and returns its output, failing the test on an
// error.
func mergeStep(t *testing.T, f *fixture, in activities.MergeTaskInput) activities.MergeTaskOutput {
	t.Helper()
	val, err := f.env.ExecuteActivity(activities.MergeTaskName, in)
	if err != nil {
		t.Fatalf("MergeTask %+v: %v", in, err)
	}
	var out activities.MergeTaskOutput
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Two lanes on real git: lane 2 merges task b onto lane 1's kept tip (not
// the integration head), each tip is verified apart without moving the
// branch, and the tips land only in order by compare-and-swap: lane 2
// first is refused (the head is not lane 1's tip), then lane 1 and lane 2
// land and the branch's first-parent line is head, lane 1, lane 2.
func TestMergeTaskLanesMergeOntoATipAndLandInOrder(t *testing.T) {
	f, _ := campaignFixture(t, 1)
	a := taskGo(t, f, "la", "a.txt", 1) // the fixture made task a
	b := taskGo(t, f, "lb", "b.txt", 1)
	repo := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "integration.git")
	head0 := gitSetup(t, repo, "rev-parse", "refs/heads/integration")
	ref1, ref2 := "refs/ralph/campaigns/camp/lanes/1", "refs/ralph/campaigns/camp/lanes/2"

	l1 := mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{a}, VerifyCommand: "true",
		Lane: activities.LaneMerge, HoldRef: ref1})
	if l1.Outcome != activities.MergeHeld || l1.Head != head0 || gitSetup(t, repo, "rev-parse", ref1) != l1.Tip {
		t.Fatalf("lane 1's merge = %+v, want its tip held on %s", l1, ref1)
	}
	l2 := mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{b}, VerifyCommand: "true",
		Lane: activities.LaneMerge, Onto: l1.Tip, OntoRef: ref1, HoldRef: ref2})
	if l2.Outcome != activities.MergeHeld || gitSetup(t, repo, "rev-parse", l2.Tip+"^1") != l1.Tip ||
		gitSetup(t, repo, "ls-tree", "--name-only", l2.Tip) != "a.txt\nb.txt" || !strings.Contains(l2.DiffStat, "b.txt") ||
		strings.Contains(l2.DiffStat, "a.txt") {
		t.Fatalf("lane 2's merge = %+v: want b merged onto lane 1's tip %s (parent %s, tree %q)", l2, l1.Tip,
			gitSetup(t, repo, "rev-parse", l2.Tip+"^1"), gitSetup(t, repo, "ls-tree", "--name-only", l2.Tip))
	}

	verify := func(tip, ref, command string) activities.MergeTaskOutput {
		return mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{b}, VerifyCommand: command,
			Lane: activities.LaneVerify, Onto: l1.Tip, HoldRef: ref, Tip: tip})
	}
	if v := verify(l2.Tip, ref2, "test -f a.txt && test -f b.txt"); v.Outcome != activities.MergeHeld || !v.Verification.Passed() {
		t.Fatalf("lane 2's verify = %+v, want passed on a tree holding a and b", v)
	}
	if v := verify(l2.Tip, ref2, "echo broken; exit 4"); v.Outcome != activities.MergeRed || v.Verification.ExitCode != 4 ||
		!strings.Contains(v.Verification.Output, "broken") {
		t.Fatalf("a failing verify = %+v, want red", v)
	}
	if got := gitSetup(t, repo, "rev-parse", "refs/heads/integration"); got != head0 {
		t.Fatalf("verifying moved the integration branch to %s", got)
	}
	if _, err := os.Lstat(filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "lane-2")); !os.IsNotExist(err) {
		t.Fatalf("the lane's scratch clone is still there (%v)", err)
	}

	land := func(tip, on, ref string, task activities.CampaignTask) activities.MergeTaskOutput {
		return mergeStep(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{task}, VerifyCommand: "true",
			HoldRef: ref, Land: tip, LandOn: on})
	}
	if out := land(l2.Tip, l1.Tip, ref2, b); out.Outcome != activities.MergeMoved || gitSetup(t, repo, "rev-parse", "refs/heads/integration") != head0 {
		t.Fatalf("lane 2 landing before lane 1 = %+v, want moved and the branch untouched", out)
	}
	if out := land(l1.Tip, head0, ref1, a); out.Outcome != activities.MergeLanded || out.Head != l1.Tip {
		t.Fatalf("lane 1's landing = %+v", out)
	}
	if out := land(l2.Tip, l1.Tip, ref2, b); out.Outcome != activities.MergeLanded || out.Head != l2.Tip {
		t.Fatalf("lane 2's landing = %+v", out)
	}
	line := gitSetup(t, repo, "rev-list", "--first-parent", "refs/heads/integration")
	if want := l2.Tip + "\n" + l1.Tip + "\n" + head0; !strings.HasPrefix(line, want) {
		t.Fatalf("the branch's first parents are\n%s\nwant\n%s", line, want)
	}
}

// Lane inputs that do not fit together are refused, naming what is wrong,
// before any git runs; a lane base its ref does not hold is refused too.
func TestMergeTaskRefusesBadLaneInputs(t *testing.T) {
	f, in := campaignFixture(t, 1)
	ref := "refs/ralph/campaigns/camp/lanes/1"
	for want, bad := range map[string]activities.MergeTaskInput{
		"onto, ontoRef and tip are a lane's inputs":        {Onto: strings.Repeat("a", 40), OntoRef: ref},
		`lane "both" is neither`:                           {Lane: "both", HoldRef: ref},
		"is not refs/ralph/campaigns/<campaign>/lanes/<n>": {Lane: activities.LaneMerge, HoldRef: "refs/heads/main"},
		"onto and ontoRef go together":                     {Lane: activities.LaneMerge, HoldRef: ref, Onto: strings.Repeat("a", 40)},
		"a lane's verify needs the tip":                    {Lane: activities.LaneVerify, HoldRef: ref},
		"neither holds for approval, lands":                {Lane: activities.LaneMerge, HoldRef: ref, Hold: true},
	} {
		bad.Line, bad.Tasks, bad.VerifyCommand = in.Line, in.Tasks, in.VerifyCommand
		_, err := f.env.ExecuteActivity(activities.MergeTaskName, bad)
		var app *temporal.ApplicationError
		if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: err = %v, want a non-retryable error containing %q", bad, err, want)
		}
	}
	_, err := f.env.ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{Line: in.Line, Tasks: in.Tasks, VerifyCommand: "true",
		Lane: activities.LaneMerge, HoldRef: "refs/ralph/campaigns/camp/lanes/2", Onto: strings.Repeat("a", 40), OntoRef: ref})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(err.Error(), "is not on "+ref) {
		t.Fatalf("a base its ref does not hold: err = %v", err)
	}
	assertScratchGone(t, f)
}
