package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// Durations of the stubbed steps: a verify (a whole L = 1 step, or a lane's
// verify) takes verifyTime, a lane's merge or landing mergeTime.
const (
	verifyTime = 10 * time.Minute
	mergeTime  = 10 * time.Second
)

// treeLine plays the campaign's repository as trees: a commit is the list
// of task commits merged into it ("c:" joined), so a tip built on another
// lane's tip holds that lane's tasks, the branch moves only by
// compare-and-swap and a tree holding a red task commit fails the verify.
// lostOnce names lanes (their refs' numbers) whose verify's first attempt
// is lost, as when a worker is killed under it.
type treeLine struct {
	mu        sync.Mutex
	head      string
	refs      map[string]string
	landed    []string // the branch's task commits, in landing order
	red       map[string]bool
	conflicts map[string]string // a task commit: the commit it conflicts with
	lostOnce  map[string]bool
	lost      []string
	verifies  [][]string // every tree verified, in order
	steps     []string   // every step, for the failure message
	second    time.Duration
	order     string // the tasks' ids in the order their first goes end
}

func newTreeLine(red ...string) *treeLine {
	f := &treeLine{head: "c:", refs: map[string]string{}, red: map[string]bool{}, conflicts: map[string]string{}, lostOnce: map[string]bool{}, second: time.Minute}
	for _, r := range red {
		f.red[r] = true
	}
	return f
}

func tree(commit string) []string {
	body := strings.TrimPrefix(commit, "c:")
	if body == "" {
		return nil
	}
	return strings.Split(body, ",")
}

func commitOf(tree []string) string { return "c:" + strings.Join(tree, ",") }

// stack merges the tasks onto base as MergeStack does: a task commit the
// base holds is there already; one that conflicts with a commit the tree
// holds stops the stack (its id returned).
func (f *treeLine) stack(base string, in activities.MergeTaskInput) (string, []activities.MergedTask, string) {
	t := tree(base)
	var merged []activities.MergedTask
	for _, task := range in.Tasks {
		if with, ok := f.conflicts[task.Commit]; ok && slices.Contains(t, with) {
			return commitOf(t), merged, task.ID
		}
		if slices.Contains(t, task.Commit) {
			merged = append(merged, activities.MergedTask{ID: task.ID, Commit: commitOf(t), Already: true})
			continue
		}
		t = append(slices.Clone(t), task.Commit)
		merged = append(merged, activities.MergedTask{ID: task.ID, Commit: commitOf(t)})
	}
	return commitOf(t), merged, ""
}

// conflicted fills out for a stack stopped at a conflicting task.
func conflicted(out *activities.MergeTaskOutput, task string) {
	out.Outcome, out.ConflictTask, out.ConflictPaths = activities.MergeConflict, task, []string{"shared.txt"}
}

func (f *treeLine) check(commit string) *report.Verification {
	f.verifies = append(f.verifies, tree(commit))
	for _, c := range tree(commit) {
		if f.red[c] {
			return &report.Verification{Command: "check", ExitCode: 2, Output: c + " breaks the build"}
		}
	}
	return &report.Verification{Command: "check", ExitCode: 0, Output: "ok"}
}

func (f *treeLine) merge(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, fmt.Sprintf("%s%s:%v", in.Lane, in.Land, in.Tasks))
	out := activities.MergeTaskOutput{Head: f.head}
	switch {
	case in.DropLanes:
		f.steps[len(f.steps)-1] = "drop-lanes"
		for ref := range f.refs {
			if strings.Contains(ref, "/lanes/") {
				delete(f.refs, ref)
			}
		}
		out.Outcome = activities.MergeDropped
		return out, nil
	case in.Land != "":
		if f.refs[in.HoldRef] != in.Land {
			return out, fmt.Errorf("%s does not hold %s", in.HoldRef, in.Land)
		}
		out.Tip = in.Land
		if f.head != in.LandOn {
			out.Outcome = activities.MergeMoved
			return out, nil
		}
		f.head, out.Head, out.Outcome = in.Land, in.Land, activities.MergeLanded
		f.landed = tree(in.Land)
		return out, nil
	case in.VerifyHead:
		out.Tip, out.Verification, out.Outcome = f.head, f.check(f.head), activities.MergeVerified
		if !out.Verification.Passed() {
			out.Outcome = activities.MergeRed
		}
		return out, nil
	case in.Lane == activities.LaneMerge:
		base := f.head
		if in.Onto != "" {
			if f.refs[in.OntoRef] != in.Onto {
				return out, fmt.Errorf("%s does not hold %s", in.OntoRef, in.Onto)
			}
			base = in.Onto
		}
		var bad string
		if out.Tip, out.Merged, bad = f.stack(base, in); bad != "" {
			conflicted(&out, bad)
			return out, nil
		}
		if out.Tip == base {
			out.Outcome = activities.MergeLanded
			return out, nil
		}
		f.refs[in.HoldRef], out.Outcome = out.Tip, activities.MergeHeld
		return out, nil
	case in.Lane == activities.LaneVerify:
		if f.refs[in.HoldRef] != in.Tip {
			return out, fmt.Errorf("%s does not hold %s", in.HoldRef, in.Tip)
		}
		n := in.HoldRef[strings.LastIndex(in.HoldRef, "/")+1:]
		if f.lostOnce[n] {
			delete(f.lostOnce, n)
			f.lost = append(f.lost, n)
			return out, errors.New("the worker was lost") // retried, as a killed worker's step is
		}
		out.Tip, out.Verification, out.Outcome = in.Tip, f.check(in.Tip), activities.MergeHeld
		if !out.Verification.Passed() {
			out.Outcome = activities.MergeRed
		}
		return out, nil
	}
	var bad string
	if out.Tip, out.Merged, bad = f.stack(f.head, in); bad != "" {
		conflicted(&out, bad)
		return out, nil
	}
	if out.Tip == f.head {
		out.Outcome = activities.MergeLanded
		return out, nil
	}
	out.Verification = f.check(out.Tip)
	if !out.Verification.Passed() {
		out.Outcome = activities.MergeRed
		return out, nil
	}
	f.head, out.Head, out.Outcome = out.Tip, out.Tip, activities.MergeLanded
	f.landed = tree(out.Tip)
	return out, nil
}

// child completes task i of f.order at one minute plus i seconds; a
// later go (a task sent back) takes f.second, so it queues after the rest.
func (f *treeLine) child(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
	parts := strings.Split(workflow.GetInfo(ctx).WorkflowExecution.ID, "/")
	task, goN := parts[1], 1
	if len(parts) == 3 {
		fmt.Sscan(parts[2], &goN)
	}
	wait := time.Minute + time.Duration(strings.Index(f.order, task))*time.Second
	if goN > 1 {
		wait = f.second
	}
	if err := workflow.Sleep(ctx, wait); err != nil {
		return nil, err
	}
	rep := completeReport(1)
	return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep,
		Checkpoint: &activities.Checkpoint{Commit: fmt.Sprintf("%s@%d", task, goN)}}, nil
}

// laneRun is one campaign run over a treeLine.
type laneRun struct {
	res      CampaignResult
	status   CampaignStatus // at statusAt
	final    CampaignStatus // once finished
	took     time.Duration
	line     *treeLine
	statusAt time.Duration
}

func runLaneCampaign(t *testing.T, f *treeLine, tasks string, extra string, statusAt time.Duration) laneRun {
	t.Helper()
	limits := queueApartLimits()
	limits.CampaignTaskFaults, limits.CampaignHeadRed, limits.CampaignVerifyTimes = true, true, true // what a worker records today
	limits.CampaignDropLanes = true
	env := newCampaignEnv(limits)
	onMerge(env, f.merge)
	onLoop(env, f.child)
	takes := func(in activities.MergeTaskInput) time.Duration {
		switch {
		case in.Lane == activities.LaneMerge || in.Land != "" || in.DropLanes:
			return mergeTime
		case len(in.Tasks) > 0 && in.Tasks[0].ID == "s":
			return 3 * verifyTime // task s's stack verifies slowly
		}
		return verifyTime
	}
	for _, d := range []time.Duration{mergeTime, verifyTime, 3 * verifyTime} {
		env.OnActivity(activities.MergeTaskName, mock.Anything, mock.MatchedBy(func(in activities.MergeTaskInput) bool { return takes(in) == d })).
			After(d).Return(f.merge)
	}
	r := laneRun{line: f, statusAt: statusAt}
	f.order = tasks
	if statusAt > 0 {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(workflows.StatusQueryName)
			if err == nil {
				err = v.Get(&r.status)
			}
			if err != nil {
				t.Error(err)
			}
		}, statusAt)
	}
	var list []string
	for _, id := range tasks {
		list = append(list, fmt.Sprintf(`{"id":"%c","objective":"%c"}`, id, id))
	}
	in := `{"tasks":[` + strings.Join(list, ",") + `],"verifyCommand":"check","maxParallel":8` + extra + `}`
	start := env.Now()
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(in), (*CampaignContinuation)(nil))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("%s: %v", extra, err)
	}
	if err := env.GetWorkflowResult(&r.res); err != nil {
		t.Fatal(err)
	}
	r.took = env.Now().Sub(start)
	v, err := env.QueryWorkflow(workflows.StatusQueryName)
	if err == nil {
		err = v.Get(&r.final)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.res.Status != CampaignComplete {
		t.Fatalf("%s: result %+v; steps %v", extra, r.res, f.steps)
	}
	// A campaign that used lanes ends with its lane refs deleted, in its
	// last step; one that did not issues no such step.
	drop := "drop-lanes"
	usedLanes := slices.ContainsFunc(f.steps, func(s string) bool { return strings.HasPrefix(s, activities.LaneMerge) })
	if got := f.steps[len(f.steps)-1] == drop; got != usedLanes {
		t.Fatalf("%s: lanes used %v, the last step %q", extra, usedLanes, f.steps[len(f.steps)-1])
	}
	for ref := range f.refs {
		if strings.Contains(ref, "/lanes/") {
			t.Fatalf("%s: lane ref %s left after the campaign", extra, ref)
		}
	}
	return r
}

// TestLanesLandWhatOneLaneLands (SPEC 41): with four lanes the queue
// verifies up to four prefixes at once; x's prefix fails in the middle,
// the prefixes stacked on it are discarded (status names them and why),
// x goes back and the rest are verified again without it. The integration
// branch holds the same task commits in the same order as with one lane,
// in less than half the time.
func TestLanesLandWhatOneLaneLands(t *testing.T) {
	one := runLaneCampaign(t, newTreeLine("x@1"), "abcxdefg", "", 0)
	four := runLaneCampaign(t, newTreeLine("x@1"), "abcxdefg", `,"mergeLanes":4`, 5*time.Minute)
	want := "[a@1 b@1 c@1 d@1 e@1 f@1 g@1 x@2]"
	if fmt.Sprint(one.line.landed) != want || fmt.Sprint(four.line.landed) != want {
		t.Fatalf("landed with one lane %v, with four %v, want %s", one.line.landed, four.line.landed, want)
	}
	t.Logf("one lane took %s (%d verifies), four %s (%d verifies)", one.took, len(one.line.verifies), four.took, len(four.line.verifies))
	if four.took*2 > one.took {
		t.Fatalf("four lanes took %s, one lane %s: not half", four.took, one.took)
	}
	// Every tree verified with four lanes is a prefix of what landed,
	// or one with x's first go in its place after c.
	for _, v := range four.line.verifies {
		without := slices.DeleteFunc(slices.Clone(v), func(c string) bool { return c == "x@1" })
		if !slices.Equal(without, four.line.landed[:len(without)]) || (len(without) < len(v) && v[3] != "x@1") {
			t.Fatalf("verified %v, which is no prefix of the queue", v)
		}
	}
	s := four.status
	if len(s.Lanes) != 4 || s.Lanes[0].State != laneVerifying {
		t.Fatalf("at 5m the lanes were %+v, want four, the front verifying", s.Lanes)
	}
	var discarded []MergeVerify
	for _, v := range four.res.Tasks {
		if v.Phase != TaskMerged {
			t.Fatalf("task %+v", v)
		}
	}
	st := four.final
	for _, v := range st.Verifies {
		if v.Discarded != "" {
			discarded = append(discarded, v)
		}
		if v.Started.IsZero() || (v.Discarded == "" && v.DurationMs < verifyTime.Milliseconds()) {
			t.Fatalf("verify record without its time: %+v", v)
		}
	}
	if len(discarded) == 0 || st.VerifyDiscarded != len(discarded) || !strings.Contains(discarded[0].Discarded, "failed the verify") ||
		slices.Contains(discarded[0].Tasks, "x") {
		t.Fatalf("discarded verifies %+v (count %d)", discarded, st.VerifyDiscarded)
	}
	if one.final.VerifyDiscarded != 0 || len(one.final.Verifies) == 0 || one.final.Verifies[0].DurationMs != verifyTime.Milliseconds() ||
		one.final.Verifies[0].Started.IsZero() {
		t.Fatalf("one lane's verifies: %+v", one.final)
	}
}

// TestLanesVerifyBatches: with mergeBatch 2 each of two lanes verifies a
// batch; the batch holding x fails, is bisected as one lane's would be,
// and the branch holds what one lane with the same batches lands.
func TestLanesVerifyBatches(t *testing.T) {
	one := runLaneCampaign(t, newTreeLine("x@1"), "abxcdefg", `,"mergeBatch":2`, 0)
	two := runLaneCampaign(t, newTreeLine("x@1"), "abxcdefg", `,"mergeBatch":2,"mergeLanes":2`, 0)
	if fmt.Sprint(one.line.landed) != fmt.Sprint(two.line.landed) || !slices.Contains(two.line.landed, "x@2") || len(two.line.landed) != 8 {
		t.Fatalf("landed with one lane %v, with two %v", one.line.landed, two.line.landed)
	}
	batches := 0
	for _, v := range two.final.Verifies {
		if v.Lane > 0 && len(v.Tasks) == 2 {
			batches++
		}
	}
	t.Logf("one lane took %s, two %s; verifies %+v", one.took, two.took, two.final.Verifies)
	if batches < 2 || two.took >= one.took {
		t.Fatalf("two lanes: %d lane verifies of a batch, took %s against %s", batches, two.took, one.took)
	}
}

// TestLanesSurviveALostWorker: the verifies of lanes 2 and 3 are lost on
// their first attempt (as when the worker running them is killed) and
// retried; nothing is discarded and the branch holds every task in queue
// order.
func TestLanesSurviveALostWorker(t *testing.T) {
	f := newTreeLine()
	f.lostOnce["2"], f.lostOnce["3"] = true, true
	r := runLaneCampaign(t, f, "abcdef", `,"mergeLanes":3`, 0)
	if fmt.Sprint(f.lost) != "[2 3]" || fmt.Sprint(f.landed) != "[a@1 b@1 c@1 d@1 e@1 f@1]" {
		t.Fatalf("lost %v, landed %v", f.lost, f.landed)
	}
	if r.final.VerifyDiscarded != 0 || r.final.VerifyCount != 6 || r.final.VerifyFailed != 0 {
		t.Fatalf("status %+v", r.final)
	}
}

// TestLanesSendBackAConflict: k's first go conflicts with b's change; with
// three lanes no lane stacks on k's (its merge gave no tip), k's lane is
// settled at the front as one lane settles it (k goes back, its second go
// lands last) and the lanes open again behind it; the branch equals one
// lane's.
func TestLanesSendBackAConflict(t *testing.T) {
	lines := []*treeLine{newTreeLine(), newTreeLine()}
	for _, f := range lines {
		f.conflicts["k@1"] = "b@1"
	}
	one := runLaneCampaign(t, lines[0], "abkcde", "", 0)
	three := runLaneCampaign(t, lines[1], "abkcde", `,"mergeLanes":3`, 0)
	want := "[a@1 b@1 c@1 d@1 e@1 k@2]"
	if fmt.Sprint(one.line.landed) != want || fmt.Sprint(three.line.landed) != want {
		t.Fatalf("landed with one lane %v, with three %v, want %s", one.line.landed, three.line.landed, want)
	}
	if three.final.VerifyDiscarded != 0 || three.final.VerifyCount != 6 || three.took >= one.took {
		t.Fatalf("three lanes took %s against %s; verifies %+v", three.took, one.took, three.final.Verifies)
	}
}

// TestLanesDiscardBehindARedLaneAtOnce: x's lane is red while the front
// (s, a slow verify) still runs: the lane stacked on x is discarded then,
// mid-verify, and no lane opens on x; once s and b landed x goes back and
// the rest land, as with one lane.
func TestLanesDiscardBehindARedLaneAtOnce(t *testing.T) {
	one := runLaneCampaign(t, newTreeLine("x@1"), "sbxcde", "", 0)
	four := runLaneCampaign(t, newTreeLine("x@1"), "sbxcde", `,"mergeLanes":4`, 0)
	want := "[s@1 b@1 c@1 d@1 e@1 x@2]"
	if fmt.Sprint(one.line.landed) != want || fmt.Sprint(four.line.landed) != want {
		t.Fatalf("landed with one lane %v, with four %v, want %s", one.line.landed, four.line.landed, want)
	}
	var early []MergeVerify
	for _, v := range four.final.Verifies {
		if strings.Contains(v.Discarded, "failed the verify") && v.DurationMs < verifyTime.Milliseconds() {
			early = append(early, v)
		}
	}
	// c's lane was discarded while its verify ran; none after it stacked
	// on x (its lanes open again only once x went back).
	if len(early) != 1 || early[0].Tasks[0] != "c" || four.final.VerifyDiscarded != 1 {
		t.Fatalf("no verify discarded mid-run behind x's red lane: %+v", four.final.Verifies)
	}
}
