package campaign

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// fakeLine plays the integration branch: which task commits it holds. A
// stack that would hold x and y both fails the verify unless one of them is
// a later go (the fixed one).
type fakeLine struct {
	mu      sync.Mutex
	landed  []string // task commits, in landing order
	merges  [][]string
	red     []bool                    // per merge
	reports map[string]*report.Report // the previous report each child got
}

func (f *fakeLine) merge(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var stack []string
	for _, t := range in.Tasks {
		stack = append(stack, t.Commit)
	}
	f.merges = append(f.merges, stack)
	all := append(slices.Clone(f.landed), stack...)
	head := fmt.Sprintf("head-%d", len(f.landed))
	out := activities.MergeTaskOutput{Head: head, Tip: "tip-" + strings.Join(stack, "+")}
	if slices.Contains(all, "x@1") && slices.Contains(all, "y@1") {
		out.Outcome = activities.MergeRed
		f.red = append(f.red, true)
		out.Verification = &report.Verification{Command: in.VerifyCommand, ExitCode: 3, Output: "x and y clash"}
		return out, nil
	}
	out.Verification = &report.Verification{Command: in.VerifyCommand, ExitCode: 0, Output: "ok"}
	for _, c := range stack {
		out.Merged = append(out.Merged, activities.MergedTask{ID: strings.Split(c, "@")[0], Commit: "merge-" + c})
	}
	f.landed = all
	f.red = append(f.red, false)
	out.Outcome, out.Head = activities.MergeLanded, fmt.Sprintf("head-%d", len(f.landed))
	return out, nil
}

func (f *fakeLine) child(ctx workflow.Context, input json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	parts := strings.Split(id, "/")
	task, goN := parts[1], 1
	if len(parts) == 3 {
		fmt.Sscan(parts[2], &goN)
	}
	f.mu.Lock()
	f.reports[id] = start.PreviousReport
	f.mu.Unlock()
	// First goes complete a second apart in list order (a, x, b, y).
	if err := workflow.Sleep(ctx, time.Minute+time.Duration(strings.Index("axby", task))*time.Second); err != nil {
		return nil, err
	}
	rep := completeReport(1)
	return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep, Usage: usage.Usage{PromptTokens: 10, CompletionTokens: 5},
		Checkpoint: &activities.Checkpoint{Commit: fmt.Sprintf("%s@%d", task, goN)}}, nil
}

func TestCampaignBisectsARedStack(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	limits := queueApartLimits()
	env := newCampaignEnv(limits)
	onMerge(env, f.merge)
	onLoop(env, f.child)
	// A merge takes 30 s, so x, b and y queue while a merges.
	env.OnActivity(activities.MergeTaskName, mock.Anything, mock.Anything).After(30 * time.Second).Return(f.merge)

	// Four tasks land as one stack once all four completed: a chain makes the
	// order deterministic (d waits for nothing, but maxParallel 4 starts all).
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"x","objective":"x"},{"id":"b","objective":"b"},{"id":"y","objective":"y"}],
		"verifyCommand":"check","maxParallel":4,"mergeBatch":4}`
	res := runCampaign(t, env, in)
	if res.Status != CampaignComplete {
		t.Fatalf("result = %+v", res)
	}
	// The stack of four failed and was bisected: its halves were verified in
	// turn, the one of x and y that merged second went back, and its second
	// go landed; every task landed exactly once.
	// a merged alone while x, b and y queued; their stack failed and was
	// bisected: [x] landed, [b y] failed, [b] landed, [y] went back and its
	// second go landed.
	want := [][]string{{"a@1"}, {"x@1", "b@1", "y@1"}, {"x@1"}, {"b@1", "y@1"}, {"b@1"}, {"y@1"}, {"y@2"}}
	if fmt.Sprint(f.merges) != fmt.Sprint(want) || fmt.Sprint(f.landed) != "[a@1 x@1 b@1 y@2]" {
		t.Fatalf("merges = %v landing %v, want %v", f.merges, f.landed, want)
	}
	back := f.reports["camp/y/2"]
	if back == nil || back.Status != report.StatusContinue || !strings.Contains(back.Summary, "exited 3") || !strings.Contains(back.Summary, "x and y clash") {
		t.Fatalf("y's second go started from %+v", back)
	}
	if report.Validate(*back, limits.MaxHandoffChars) != nil {
		t.Fatalf("the campaign's report is invalid: %v", report.Validate(*back, limits.MaxHandoffChars))
	}
	if f.reports["camp/a"] != nil {
		t.Fatalf("a first go got a report: %+v", f.reports["camp/a"])
	}
	if res.Usage.PromptTokens != 50 {
		t.Fatalf("usage = %+v, want the five loops' sum", res.Usage)
	}
}

func TestCampaignBlocksDependentsAndStopsAfterMaxMergeAttempts(t *testing.T) {
	limits := queueApartLimits()
	env := newCampaignEnv(limits)
	merges := 0
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		merges++
		return activities.MergeTaskOutput{Outcome: activities.MergeConflict, Head: "h", ConflictTask: in.Tasks[0].ID, ConflictPaths: []string{"f.txt"}}, nil
	})
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		rep := completeReport(1)
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b","dependsOn":["a"]}],"verifyCommand":"check","maxMergeAttempts":2}`
	res := runCampaign(t, env, in)
	want := []TaskResult{
		{ID: "a", Phase: TaskBlocked, LastFailure: "did not merge after 2 attempts; the last: merging into ralph/campaigns/camp/integration conflicts in f.txt"},
		{ID: "b", Phase: TaskBlocked, LastFailure: "dependency a ended blocked"},
	}
	if res.Status != CampaignPartial || fmt.Sprint(res.Tasks) != fmt.Sprint(want) || merges != 2 {
		t.Fatalf("result = %+v after %d merges, want partial %+v after 2", res, merges, want)
	}
}

func TestCampaignApprovalHoldsAMergeUntilApproved(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	limits := queueApartLimits()
	env := newCampaignEnv(limits)
	var calls []activities.MergeTaskInput
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		calls = append(calls, in)
		if in.Land != "" {
			return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: in.Land, Tip: in.Land,
				Merged: []activities.MergedTask{{ID: in.Tasks[0].ID, Commit: in.Land}}}, nil
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeHeld, Head: "h", Tip: "tip-" + in.Tasks[0].Commit,
			DiffStat: " a.txt | 1 +", Verification: &report.Verification{Command: in.VerifyCommand}}, nil
	})
	onLoop(env, f.child)

	var held, again TaskStatus
	refused := ""
	env.RegisterDelayedCallback(func() {
		held = campaignTask(t, env, "a")
		env.UpdateWorkflow(workflows.UpdateApprove, "1", &testsuite.TestUpdateCallback{OnReject: func(err error) { refused = err.Error() },
			OnAccept: func() {}, OnComplete: func(any, error) {}}, TaskRequest{Task: "zz"})
		env.UpdateWorkflow(workflows.UpdateReject, "2", noopUpdate(), RejectRequest{Task: "a", Reason: "name the file A.txt"})
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() {
		again = campaignTask(t, env, "a")
		env.UpdateWorkflow(workflows.UpdateApprove, "3", noopUpdate(), TaskRequest{Task: "a"})
	}, 10*time.Minute)
	res := runCampaign(t, env, `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check","approve":"merge"}`)
	if held.Phase != TaskAwaitingApproval || held.DiffStat != " a.txt | 1 +" || !strings.Contains(refused, `"zz" is no task`) {
		t.Fatalf("first wait: %+v, refusal %q", held, refused)
	}
	if again.Phase != TaskAwaitingApproval || again.Go != 2 || again.MergeAttempts != 1 {
		t.Fatalf("second wait: %+v", again)
	}
	if back := f.reports["camp/a/2"]; back == nil || !strings.Contains(back.Summary, "the merge was rejected: name the file A.txt") {
		t.Fatalf("the second go started from %+v", back)
	}
	last := calls[len(calls)-1]
	if res.Status != CampaignComplete || res.Tasks[0].MergeCommit != "tip-a@2" || last.Land != "tip-a@2" || last.LandOn != "h" ||
		!strings.HasPrefix(last.HoldRef, "refs/ralph/campaigns/camp/held/a/") {
		t.Fatalf("result %+v after %+v", res, last)
	}
}

func noopUpdate() *testsuite.TestUpdateCallback {
	return &testsuite.TestUpdateCallback{OnReject: func(error) {}, OnAccept: func() {}, OnComplete: func(any, error) {}}
}

func TestCampaignCancelReachesEveryLoop(t *testing.T) {
	env := newCampaignEnv(queueApartLimits())
	var mu sync.Mutex
	cancelled := map[string]bool{}
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		err := workflow.Sleep(ctx, 24*time.Hour)
		mu.Lock()
		cancelled[workflow.GetInfo(ctx).WorkflowExecution.ID] = err != nil
		mu.Unlock()
		return nil, err
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, 10*time.Minute)
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(`{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"}],"verifyCommand":"check"}`),
		(*CampaignContinuation)(nil))
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err = %v, want cancelled", err)
	}
	// maxParallel 2: a and b ran and took the cancel; c never started.
	if fmt.Sprint(cancelled) != "map[camp/a:true camp/b:true]" {
		t.Fatalf("loops that saw the cancel: %v", cancelled)
	}
}

// TestCampaignPauseAddTasksAndStop: a pause holds new starts (a running
// loop goes on), add-tasks extends the list (checked as the input is), and
// stop signals the running loops, lets queued merges land and ends stopped.
func TestCampaignPauseAddTasksAndStop(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	env := newCampaignEnv(queueApartLimits())
	onMerge(env, f.merge)
	var mu sync.Mutex
	stopped := map[string]bool{}
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		task := strings.Split(id, "/")[1]
		stop := workflow.GetSignalChannel(ctx, workflows.SignalStop)
		got := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); got = true })
		sel.AddFuture(workflow.NewTimer(ctx, time.Hour), func(workflow.Future) {})
		sel.Select(ctx)
		mu.Lock()
		stopped[task] = got
		mu.Unlock()
		rep := completeReport(1)
		status := report.OutcomeComplete
		if got {
			status = report.OutcomeStopped
		}
		return &workflows.Result{Status: status, RoundsStarted: 1, Report: &rep, Checkpoint: &activities.Checkpoint{Commit: task + "@1"}}, nil
	})

	var paused, added TaskStatus
	var addRefused, pauseReason string
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdatePause, "p", noopUpdate())
		env.UpdateWorkflow(UpdateAddTasks, "bad", &testsuite.TestUpdateCallback{OnReject: func(err error) { addRefused = err.Error() },
			OnAccept: func() {}, OnComplete: func(any, error) {}}, AddTasksRequest{Tasks: []Task{{ID: "a", Objective: "again"}}})
		env.UpdateWorkflow(UpdateAddTasks, "add", noopUpdate(), AddTasksRequest{Tasks: []Task{{ID: "c", Objective: "c", DependsOn: []string{"a"}}}})
	}, 10*time.Minute)
	env.RegisterDelayedCallback(func() {
		paused = campaignTask(t, env, "b") // a finished at 1 h; b may not start while paused
		added = campaignTask(t, env, "c")
		if v, err := env.QueryWorkflow(workflows.StatusQueryName); err == nil {
			var st CampaignStatus
			_ = v.Get(&st)
			pauseReason = st.Phase + "/" + st.PauseReason
		}
		env.UpdateWorkflow(workflows.UpdateResume, "r", noopUpdate())
	}, 90*time.Minute)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateStop, "s", noopUpdate(), workflows.StopRequest{Reason: "enough"})
	}, 100*time.Minute)
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"}],"verifyCommand":"check","maxParallel":1}`
	res := runCampaign(t, env, in)
	if paused.Phase != TaskWaiting || added.Phase != TaskWaiting || !strings.Contains(addRefused, `"a" is used by another task`) || pauseReason != "paused/operator" {
		t.Fatalf("while paused: b %+v, c %+v, refusal %q, phase/pauseReason %q", paused, added, addRefused, pauseReason)
	}
	// After the resume b started; the stop reached it; a merged; c never started.
	want := fmt.Sprint([]TaskResult{{ID: "a", Phase: TaskMerged, MergeCommit: "merge-a@1"},
		{ID: "b", Phase: TaskCancelled, LastFailure: "the loop was stopped"},
		{ID: "c", Phase: TaskCancelled, LastFailure: "not started: the campaign ended stopped"}})
	if res.Status != CampaignStopped || fmt.Sprint(res.Tasks) != want || !stopped["b"] || stopped["a"] {
		t.Fatalf("result %+v (loops stopped: %v), want stopped with %s", res, stopped, want)
	}
}

func TestCampaignNotifiesReturnedMergedAndItsEnd(t *testing.T) {
	limits := queueApartLimits()
	limits.NotifyEvents = []string{EventMerged, EventReturned, CampaignComplete}
	env := newCampaignEnv(limits)
	merges := 0
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		merges++
		if merges == 1 {
			return activities.MergeTaskOutput{Outcome: activities.MergeConflict, Head: "h", ConflictTask: "a", ConflictPaths: []string{"f.txt"}}, nil
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "m", Merged: []activities.MergedTask{{ID: "a", Commit: "m"}}}, nil
	})
	var mu sync.Mutex
	var events []string
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.NotifyInput) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s@%d/%d", in.Event, in.Round, in.Seq))
		return nil
	}, activity.RegisterOptions{Name: activities.NotifyName})
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		rep := completeReport(1)
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	// The end event's detached child: its start is what is recorded.
	onNotify(env, func(in activities.NotifyInput) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s@%d/%d", in.Event, in.Round, in.Seq))
	})
	runCampaign(t, env, `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check"}`)
	if fmt.Sprint(events) != "[returned@1/1 merged@2/1 complete@0/0]" {
		t.Fatalf("events = %v", events)
	}
}

func completeReport(round int) report.Report {
	return report.Report{Status: report.StatusComplete, Summary: fmt.Sprintf("finished in %d", round),
		Evidence: []string{"tests pass"}, NextSteps: []string{}, Blocker: ""}
}
