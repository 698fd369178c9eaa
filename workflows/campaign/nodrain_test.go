package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// loopUsage is what every played loop spent.
var loopUsage = usage.Usage{ModelCalls: 3, PromptTokens: 1000, CompletionTokens: 100}

// times is n loops' usage.
func times(n int) usage.Usage {
	var u usage.Usage
	for range n {
		u = u.Add(loopUsage)
	}
	return u
}

// noDrainLimits are a campaign's limits as a worker resolves them since
// CampaignNoDrain, with room for 8 loops at once.
func noDrainLimits() activities.Limits {
	l := queueApartLimits()
	l.CampaignNoDrain, l.MaxCampaignParallel = true, 8
	l.CampaignShares, l.CampaignEvidence, l.CampaignHeldApart = true, true, true // as every worker since
	return l
}

// outliving plays task loops as a campaign since CampaignNoDrain starts
// them: each runs minutes[task] (60 unless named), then tells the campaign
// how it ended (SignalTaskEnded, as Ralph does) and completes. It records
// when each loop started and ended, on the test clock from the first start,
// and the merges.
type outliving struct {
	mu      sync.Mutex
	minutes map[string]int
	begin   time.Time
	started map[string]time.Duration
	ended   map[string]time.Duration
	merges  []string
	checks  [][]string
	// closed is what CheckTaskLoops answers for a loop from its check
	// numbered from on (1: the first); nil: every loop runs.
	closed map[string]closedLoop
}

type closedLoop struct {
	from int
	end  activities.TaskLoopEnd
}

func newOutliving(env *testsuite.TestWorkflowEnvironment, minutes map[string]int) *outliving {
	o := &outliving{minutes: minutes, started: map[string]time.Duration{}, ended: map[string]time.Duration{}}
	onLoop(env, o.loop)
	onMerge(env, o.merge)
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.CheckTaskLoopsInput) (activities.CheckTaskLoopsOutput, error) {
		return o.check(in), nil
	}, activity.RegisterOptions{Name: activities.CheckTaskLoopsName})
	return o
}

func (o *outliving) loop(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
	if start == nil || !start.ReportEnd || start.Task == "" || start.Go == 0 {
		return nil, fmt.Errorf("the loop was started without asking it to report its end: %+v", start)
	}
	o.mu.Lock()
	if o.begin.IsZero() {
		o.begin = workflow.Now(ctx)
	}
	o.started[start.Task] = workflow.Now(ctx).Sub(o.begin)
	minutes := o.minutes[start.Task]
	if minutes == 0 {
		minutes = 60
	}
	o.mu.Unlock()
	if err := workflow.Sleep(ctx, time.Duration(minutes)*time.Minute); err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.ended[start.Task] = workflow.Now(ctx).Sub(o.begin)
	o.mu.Unlock()
	res := &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Usage: loopUsage,
		Checkpoint: &activities.Checkpoint{Commit: start.Task + "@1"}}
	end := ended(start.Task, start.Go, report.OutcomeComplete)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.SignalExternalWorkflow(dctx, start.Campaign, "", workflows.SignalTaskEnded, end).Get(dctx, nil); err != nil {
		return nil, err
	}
	return res, nil
}

func (o *outliving) merge(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := activities.MergeTaskOutput{Outcome: activities.MergeLanded, Verification: &report.Verification{Command: in.VerifyCommand}}
	for _, t := range in.Tasks {
		o.merges = append(o.merges, t.ID)
		out.Merged = append(out.Merged, activities.MergedTask{ID: t.ID, Commit: "m-" + t.ID})
	}
	out.Head = fmt.Sprintf("head-%d", len(o.merges))
	return out, nil
}

func (o *outliving) check(in activities.CheckTaskLoopsInput) activities.CheckTaskLoopsOutput {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.checks = append(o.checks, slices.Clone(in.WorkflowIDs))
	out := activities.CheckTaskLoopsOutput{Ended: []activities.TaskLoopEnd{}}
	for _, id := range in.WorkflowIDs {
		if c, ok := o.closed[id]; ok && len(o.checks) >= c.from {
			out.Ended = append(out.Ended, c.end)
		}
	}
	return out
}

// ended is a loop's report of its end, as Ralph sends it.
func ended(task string, n int, status string) workflows.TaskEnded {
	e := workflows.TaskEnded{Task: task, Go: n, WorkflowID: goWorkflowID("camp", task, n), Status: status, Rounds: 1, Usage: loopUsage}
	switch status {
	case report.OutcomeComplete:
		e.Commit = task + "@1"
	case report.OutcomeBlocked:
		e.Blocker = "needs credentials"
	}
	return e
}

// tasksInput is an inline campaign input of n tasks t00.., maxParallel 8
// and a token budget.
func tasksInput(n int) json.RawMessage {
	var tasks []string
	for i := range n {
		tasks = append(tasks, fmt.Sprintf(`{"id":"t%02d","objective":"do %d"}`, i, i))
	}
	return json.RawMessage(`{"tasks":[` + strings.Join(tasks, ",") + `],"verifyCommand":"check","maxParallel":8,"maxTokens":1200000}`)
}

// continuation decodes the campaign's continue-as-new input.
func continuationOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) (CampaignContinuation, int) {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want the campaign to continue as new, got %v", err)
	}
	size := 0
	for _, p := range can.Input.GetPayloads() {
		size += len(p.GetData())
	}
	var k CampaignContinuation
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &k); err != nil {
		t.Fatal(err)
	}
	return k, size
}

func phasesOf(k CampaignContinuation) map[string]int {
	phases := map[string]int{}
	for _, task := range k.Tasks {
		phases[task.Phase]++
	}
	return phases
}

// firstRun runs a campaign of 12 tasks whose 8 loops run an hour, with
// continue-as-new suggested at 5 minutes, and returns its continuation,
// the minute the campaign's run closed and the loops' ends (the test
// environment plays the abandoned loops on after the run closed; their
// reports reach no run).
func firstRun(t *testing.T, also func(env *testsuite.TestWorkflowEnvironment)) (CampaignContinuation, int, map[string]time.Duration) {
	t.Helper()
	env := newCampaignEnv(noDrainLimits())
	o := newOutliving(env, nil)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)
	if also != nil {
		also(env)
	}
	closedAt := 0
	var endedThen map[string]time.Duration
	for m := 1; m <= 10; m++ {
		env.RegisterDelayedCallback(func() {
			if closedAt == 0 && env.IsWorkflowCompleted() {
				closedAt = m // it closed within the minute before
				o.mu.Lock()
				endedThen = maps.Clone(o.ended)
				o.mu.Unlock()
			}
		}, time.Duration(m)*time.Minute+time.Second)
	}
	env.ExecuteWorkflow(CampaignWorkflowName, tasksInput(12), (*CampaignContinuation)(nil))
	k, size := continuationOf(t, env)
	t.Logf("closed by minute %d with a continuation of %d bytes carrying %v; loops ended by then %v", closedAt, size, phasesOf(k), endedThen)
	return k, closedAt, endedThen
}

// nextRun runs the campaign's next run from k; the loops the first run
// started are played by their reports, sent at the given times (they run
// outside this test environment, as they run outside the closed run).
func nextRun(k CampaignContinuation, minutes map[string]int, reports map[time.Duration][]workflows.TaskEnded) (*testsuite.TestWorkflowEnvironment, *outliving) {
	env := newCampaignEnv(noDrainLimits())
	o := newOutliving(env, minutes)
	o.begin = env.Now()
	for at, ends := range reports {
		env.RegisterDelayedCallback(func() {
			for _, e := range ends {
				env.SignalWorkflow(workflows.SignalTaskEnded, e)
			}
		}, at)
	}
	env.SetContinuedExecutionRunID("run-1")
	return env, o
}

// TestContinueAsNewLeavesTheLoopsRunning (SPEC 39, loops outlive a run):
// continue-as-new suggested while 8 loops run does not wait for them: the
// campaign continues at once, carrying the 8 running with their go and
// budget share; in the next run each loop's report ends its task's go and
// lands it, the 4 waiting tasks start only as the carried loops end
// (maxParallel 8 holds), and the result has every task merged.
func TestContinueAsNewLeavesTheLoopsRunning(t *testing.T) {
	k, closedAt, endedThen := firstRun(t, nil)
	phases := phasesOf(k)
	if closedAt != 5 || len(endedThen) != 0 || phases[TaskRunning] != 8 || phases[TaskWaiting] != 4 {
		t.Fatalf("continued at minute %d with loops ended %v carrying %v; want at 5 with 8 running, none ended", closedAt, endedThen, phases)
	}
	for _, task := range k.Tasks[:8] {
		if task.Phase != TaskRunning || task.Go != 1 || task.share != 1200000/8 {
			t.Fatalf("task %s carried %s go %d share %d; want running go 1 with a share of %d", task.Task.ID, task.Phase, task.Go, task.share, 1200000/8)
		}
	}

	reports := map[time.Duration][]workflows.TaskEnded{}
	for i := range 8 {
		at := time.Duration(10+i) * time.Minute
		reports[at] = append(reports[at], ended(fmt.Sprintf("t%02d", i), 1, report.OutcomeComplete))
	}
	env, o2 := nextRun(k, map[string]int{"t08": 30, "t09": 30, "t10": 30, "t11": 30}, reports)
	env.ExecuteWorkflow(CampaignWorkflowName, nil, &k)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	t.Logf("next run: %s, loops started %v, merges %v, usage %+v", res.Status, o2.started, o2.merges, res.Usage)
	if res.Status != CampaignComplete || len(res.Tasks) != 12 || len(o2.merges) != 12 || res.Usage != times(12) {
		t.Fatalf("result %s with %d tasks, %d merges, usage %+v; want 12 merged, 12 loops' usage", res.Status, len(res.Tasks), len(o2.merges), res.Usage)
	}
	for _, task := range res.Tasks {
		if task.Phase != TaskMerged {
			t.Fatalf("task %s ended %s", task.ID, task.Phase)
		}
	}
	// t08 took t00's place when t00's report came at 10m, t11 t03's at 13m:
	// never more than 8 loops at once, the carried ones counted.
	for i, id := range []string{"t08", "t09", "t10", "t11"} {
		if want := time.Duration(10+i) * time.Minute; o2.started[id] != want {
			t.Fatalf("%s started at %s, want %s (when a carried loop ended)", id, o2.started[id], want)
		}
	}
}

// TestLoopEndInTheContinueAsNewTaskIsCarried: a loop's report that arrives
// in the workflow task that continues as new (with a report for a go that
// is not the task's, ignored) is applied and carried: the task blocked,
// its usage counted, 7 loops carried running.
func TestLoopEndInTheContinueAsNewTaskIsCarried(t *testing.T) {
	k, closedAt, _ := firstRun(t, func(env *testsuite.TestWorkflowEnvironment) {
		// In this order, after the timer's own workflow task: t01's report
		// (no task of its own), the suggestion, then a stale report whose
		// delivery starts the workflow task that continues as new.
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflowSkippingWorkflowTask(workflows.SignalTaskEnded, ended("t01", 1, report.OutcomeBlocked))
			env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 0)
			env.SignalWorkflow(workflows.SignalTaskEnded, ended("t02", 7, report.OutcomeComplete))
		}, 4*time.Minute)
	})
	phases := phasesOf(k)
	var t01, t02 taskState
	for _, task := range k.Tasks {
		switch task.Task.ID {
		case "t01":
			t01 = task
		case "t02":
			t02 = task
		}
	}
	if closedAt != 4 || phases[TaskRunning] != 7 || t01.Phase != TaskBlocked || t01.LastFailure != "the loop reported blocked: needs credentials" ||
		t01.Usage != loopUsage || k.Usage != loopUsage || t02.Phase != TaskRunning {
		t.Fatalf("at minute %d carried %v; t01 %s %q usage %+v; t02 %s; campaign usage %+v", closedAt, phases, t01.Phase, t01.LastFailure, t01.Usage, t02.Phase, k.Usage)
	}
}

// TestCancelAfterContinueAsNewReachesCarriedLoops: in the next run, a
// guide and a stop reach the carried loops by workflow id; a cancel asks
// every carried loop to cancel and waits for their ends (reported at 20m)
// before the campaign ends cancelled.
func TestCancelAfterContinueAsNewReachesCarriedLoops(t *testing.T) {
	k, _, _ := firstRun(t, nil)
	env, _ := nextRun(k, nil, nil)
	var mu sync.Mutex
	var cancels, guided []string
	env.OnRequestCancelExternalWorkflow(mock.Anything, mock.Anything, mock.Anything).Return(func(_, id, _ string) error {
		mu.Lock()
		defer mu.Unlock()
		cancels = append(cancels, id)
		return nil
	})
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(func(_, id, _, name string, _ any) error {
		mu.Lock()
		defer mu.Unlock()
		guided = append(guided, name+" "+id)
		return nil
	})
	guide := sendUpdate(env, time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Task: "t03", Text: "Look at main.go."})
	env.RegisterDelayedCallback(env.CancelWorkflow, 2*time.Minute)
	var cancelled []workflows.TaskEnded
	for i := range 8 {
		e := ended(fmt.Sprintf("t%02d", i), 1, workflows.OutcomeCancelled)
		e.Failure = "canceled"
		cancelled = append(cancelled, e)
	}
	env.RegisterDelayedCallback(func() {
		for _, e := range cancelled {
			env.SignalWorkflow(workflows.SignalTaskEnded, e)
		}
	}, 20*time.Minute)
	begin := env.Now()
	env.ExecuteWorkflow(CampaignWorkflowName, nil, &k)
	err := env.GetWorkflowError()
	took := env.Now().Sub(begin)
	t.Logf("ended %v after %s; cancel requests %v; signals %v", err, took, cancels, guided)
	if err == nil || !strings.Contains(err.Error(), "canceled") || took != 20*time.Minute {
		t.Fatalf("ended %v after %s; want cancelled once the loops reported, at 20m", err, took)
	}
	if guide.failed != nil || guide.rejected != nil || !slices.Equal(guided, []string{workflows.SignalGuide + " camp/t03"}) {
		t.Fatalf("guide: %v %v; signals %v; want the guide sent to camp/t03", guide.rejected, guide.failed, guided)
	}
	slices.Sort(cancels)
	if want := []string{"camp/t00", "camp/t01", "camp/t02", "camp/t03", "camp/t04", "camp/t05", "camp/t06", "camp/t07"}; !slices.Equal(cancels, want) {
		t.Fatalf("cancel requests %v, want %v", cancels, want)
	}
}

// TestCarriedLoopThatCannotReportIsSeenEnded: in the next run, t00's loop
// was terminated (it never reports) and t01's completed on a worker that
// did not report: CheckTaskLoops finds both closed (t01's result read), so
// t00 fails naming the termination, t01 lands; the others report; the
// campaign finishes with nothing running.
func TestCarriedLoopThatCannotReportIsSeenEnded(t *testing.T) {
	k, _, _ := firstRun(t, nil)
	k.Tasks = k.Tasks[:8] // only the carried loops
	reports := map[time.Duration][]workflows.TaskEnded{}
	for i := 2; i < 8; i++ {
		reports[10*time.Minute] = append(reports[10*time.Minute], ended(fmt.Sprintf("t%02d", i), 1, report.OutcomeComplete))
	}
	env, o := nextRun(k, nil, reports)
	result, _ := json.Marshal(workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 2, Usage: loopUsage,
		Checkpoint: &activities.Checkpoint{Commit: "t01@2"}})
	o.closed = map[string]closedLoop{
		"camp/t00": {from: 2, end: activities.TaskLoopEnd{WorkflowID: "camp/t00", Status: "terminated", Failure: "the loop's workflow was terminated"}},
		"camp/t01": {from: 2, end: activities.TaskLoopEnd{WorkflowID: "camp/t01", Status: "completed", Result: result}},
	}
	begin := env.Now()
	env.ExecuteWorkflow(CampaignWorkflowName, nil, &k)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	t.Logf("finished %s after %s; checks %v; merges %v", res.Status, env.Now().Sub(begin), o.checks, o.merges)
	got := map[string]TaskResult{}
	for _, task := range res.Tasks {
		got[task.ID] = task
	}
	if res.Status != CampaignPartial || got["t00"].Phase != TaskFailed || !strings.Contains(got["t00"].LastFailure, "terminated") ||
		got["t01"].Phase != TaskMerged || len(o.merges) != 7 || res.Usage != times(7) {
		t.Fatalf("result %s: t00 %+v, t01 %+v, merges %v, usage %+v", res.Status, got["t00"], got["t01"], o.merges, res.Usage)
	}
	// Checks at 2m (all 8 running) and 6m (t00 and t01 seen closed); t02..t07
	// reported at 10m, before the next check at 14m would ask.
	if len(o.checks) != 2 || len(o.checks[0]) != 8 || len(o.checks[1]) != 8 {
		t.Fatalf("checks %v, want two of the 8 carried loops", o.checks)
	}
}

// TestContinuationWith1000RunningTasks measures what continue-as-new
// carries for 1,000 loops running (go 3, a share, usage, a long id) and
// 4,000 tasks done: within 1 MiB, and the running tasks' part of it.
func TestContinuationWith1000RunningTasks(t *testing.T) {
	c := &campaign{limits: noDrainLimits(), byID: map[string]*taskState{}, settings: campaignSettings{ID: "camp",
		Branch: "ralph/campaigns/camp/integration", MaxParallel: 1000, VerifyCommand: "make check", MaxMergeAttempts: 3, MergeBatch: 1, Approve: ApproveNone}}
	c.sources = []activities.TasksSource{{Commit: strings.Repeat("b", 40), Path: "plan/tasks.md"}}
	for i := range capacityTasks {
		s := &taskState{Task: Task{ID: fmt.Sprintf("task-%04d", i)}, Source: 1, Phase: TaskMerged, Go: 3, Round: 12, MergeAttempts: 2,
			MergeCommit: fmt.Sprintf("%040d", i), Usage: usage.Usage{ModelCalls: 40, ToolCalls: 300, PromptTokens: 1234567, CompletionTokens: 98765}}
		if i < 1000 {
			s.Phase, s.MergeCommit, s.share = TaskRunning, "", 123456789
		}
		s.WorkflowID = workflowID(c.settings.ID, s)
		c.tasks = append(c.tasks, s)
		c.byID[s.Task.ID] = s
	}
	k := c.continuation()
	size := encodedSize(k)
	running := 0
	for i := range 1000 {
		running += encodedSize(k.Tasks[i])
	}
	t.Logf("continuation with 1,000 running tasks of 5,000: %d bytes (the running tasks %d, %d each)", size, running, running/1000)
	// Measured: 545,006 bytes, the running tasks 103,890 (103 each).
	if size > 600<<10 || size > maxPayloadBytes {
		t.Fatalf("continuation is %d bytes, over 600 KiB", size)
	}
	raw, _ := json.Marshal(k)
	var back CampaignContinuation
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if b := back.Tasks[999]; b.Phase != TaskRunning || b.share != 123456789 || b.Go != 3 || back.Tasks[1000].share != 0 {
		t.Fatalf("a running task came back %+v", b)
	}
}

// TestTaskEndedStaysSmall measures the loop's report at its worst: a
// 2,000-character blocker of characters JSON escapes.
func TestTaskEndedStaysSmall(t *testing.T) {
	e := workflows.TaskEndOf(&workflows.Result{Status: report.OutcomeBlocked, RoundsStarted: 999,
		Usage:      usage.Usage{ModelCalls: 999999, ToolCalls: 999999, PromptTokens: 999999999, CompletionTokens: 999999999},
		Checkpoint: &activities.Checkpoint{Commit: strings.Repeat("c", 40)}, Limit: "tokens",
		Report: &report.Report{Blocker: strings.Repeat("<&>\x01", 3000)}}, nil)
	e.Task, e.Go, e.WorkflowID = strings.Repeat("t", 63), 99, "camp/"+strings.Repeat("t", 63)+"/99"
	p, err := converter.GetDefaultDataConverter().ToPayload(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest task-ended signal: %d bytes", len(p.GetData()))
	// Measured: 12,467 bytes (2,000 characters, JSON escapes to 6 bytes).
	if n := len(p.GetData()); n > 16<<10 {
		t.Fatalf("task-ended is %d bytes, over 16 KiB", n)
	}
}

// TestContinueAsNewCarriesTheQueue: continue-as-new suggested while a's
// ten-minute merge runs and b, c, d wait in the queue waits only for a's
// merge: the campaign continues at 11 minutes carrying b, c and d queued
// (no next stack is taken), not after their merges (41 minutes).
func TestContinueAsNewCarriesTheQueue(t *testing.T) {
	env := newCampaignEnv(noDrainLimits())
	q := newSlowQueue(env, map[string]int{"a": 1, "b": 2, "c": 2, "d": 2})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 3*time.Minute)
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"},{"id":"d","objective":"d"}],"verifyCommand":"check","maxParallel":4}`
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(in), (*CampaignContinuation)(nil))
	k, _ := continuationOf(t, env)
	took := env.Now().Sub(q.begin)
	phases := map[string]string{}
	for _, task := range k.Tasks {
		phases[task.Task.ID] = task.Phase
	}
	t.Logf("continued as new after %s carrying %v, queue %v; merges %v", took, phases, k.Queue, q.merges)
	queued := slices.Sorted(slices.Values(k.Queue)) // in the order their loops ended, the same minute
	if took != (1+mergeMinutes)*time.Minute || phases["a"] != TaskMerged || !slices.Equal(queued, []string{"b", "c", "d"}) ||
		phases["b"] != TaskQueued || phases["d"] != TaskQueued || !slices.Equal(q.merges, []string{"a"}) {
		t.Fatalf("after %s carried %v, queue %v, merges %v; want at 11m with a merged and b, c, d queued", took, phases, k.Queue, q.merges)
	}
}
