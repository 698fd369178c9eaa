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

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// waves plays a planning campaign's world: planners that answer the plans
// given in turn (the last one again when they run out), loops that
// complete after loopTime, merges that land, and a head verify answering
// the exit codes given in turn (0 when they run out). It records what each
// planner and loop was given.
type waves struct {
	mu        sync.Mutex
	plans     []plan.Plan
	inputs    []activities.PlanWaveInput
	starts    map[string]*workflows.TaskStart
	landed    []string
	verifies  []int
	verified  []activities.MergeTaskInput
	loopTime  time.Duration
	planUsage usage.Usage
}

func newWavesEnv(limits activities.Limits, w *waves) *testsuite.TestWorkflowEnvironment {
	env := newCampaignEnv(limits)
	w.starts = map[string]*workflows.TaskStart{}
	if w.loopTime == 0 {
		w.loopTime = time.Minute
	}
	if w.planUsage == (usage.Usage{}) {
		w.planUsage = usage.Usage{ModelCalls: 1, PromptTokens: 100, CompletionTokens: 10}
	}
	env.RegisterActivityWithOptions(w.plan, activity.RegisterOptions{Name: activities.PlanWaveName})
	onMerge(env, w.merge)
	onLoop(env, w.child)
	return env
}

func (w *waves) plan(_ context.Context, in activities.PlanWaveInput) (activities.PlanWaveOutput, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inputs = append(w.inputs, in)
	p := w.plans[min(len(w.inputs), len(w.plans))-1]
	return activities.PlanWaveOutput{Plan: p, Usage: w.planUsage, SessionID: fmt.Sprint("planner-", len(w.inputs))}, nil
}

func (w *waves) merge(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
	if in.VerifyHead {
		return w.verify(in), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := activities.MergeTaskOutput{Outcome: activities.MergeLanded, Verification: &report.Verification{Command: in.VerifyCommand}}
	if in.Hold { // approve merge: the verified merge is held
		out.Outcome, out.Tip, out.Head = activities.MergeHeld, "tip-"+in.Tasks[0].ID, fmt.Sprintf("head-%d", len(w.landed))
		return out, nil
	}
	for _, t := range in.Tasks {
		w.landed = append(w.landed, t.ID)
		commit := "merge-" + t.ID
		if in.Land != "" { // an approved held merge lands its kept tip
			commit = in.Land
		}
		out.Merged = append(out.Merged, activities.MergedTask{ID: t.ID, Commit: commit})
	}
	out.Head = fmt.Sprintf("head-%d", len(w.landed))
	return out, nil
}

func (w *waves) verify(in activities.MergeTaskInput) activities.MergeTaskOutput {
	w.mu.Lock()
	defer w.mu.Unlock()
	code := 0
	if n := len(w.verified); n < len(w.verifies) {
		code = w.verifies[n]
	}
	w.verified = append(w.verified, in)
	head, outcome := fmt.Sprintf("head-%d", len(w.landed)), activities.MergeVerified
	if code != 0 {
		outcome = activities.MergeRed
	}
	return activities.MergeTaskOutput{Outcome: outcome, Head: head, Tip: head,
		Verification: &report.Verification{Command: in.VerifyCommand, ExitCode: code, Output: strings.Repeat("x", 5000) + fmt.Sprintf("\nexit %d at the end", code)}}
}

func (w *waves) child(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	w.mu.Lock()
	w.starts[id] = start
	w.mu.Unlock()
	if err := workflow.Sleep(ctx, w.loopTime); err != nil {
		return nil, err
	}
	task := strings.Split(id, "/")[1]
	if strings.HasPrefix(task, "blocked") {
		r := report.Report{Status: report.StatusBlocked, Summary: "cannot", Blocker: "the API key is missing", Evidence: []string{}, NextSteps: []string{}}
		return &workflows.Result{Status: report.OutcomeBlocked, RoundsStarted: 1, Report: &r}, nil
	}
	rep := completeReport(1)
	return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep, Usage: usage.Usage{PromptTokens: 10, CompletionTokens: 5},
		Checkpoint: &activities.Checkpoint{Commit: task + "@1"}}, nil
}

func tasksPlan(summary string, tasks ...Task) plan.Plan {
	return plan.Plan{Status: plan.StatusTasks, Summary: summary, Tasks: tasks}
}

func completePlan(summary string) plan.Plan {
	return plan.Plan{Status: plan.StatusComplete, Summary: summary, Evidence: []string{"make check passes on the head"}}
}

// TestWavesPlanRunAndCompleteVerified: wave 1 plans three tasks (c after
// a), they run with the campaign's objective beside their own and merge;
// wave 2's planner sees the wave report and says complete; the head's
// verify passes and the campaign ends complete.
func TestWavesPlanRunAndCompleteVerified(t *testing.T) {
	w := &waves{plans: []plan.Plan{
		tasksPlan("split the parser", Task{ID: "a", Objective: "do a"}, Task{ID: "b", Objective: "do b"},
			Task{ID: "c", Objective: "do c", DependsOn: []string{"a"}}),
		completePlan("the objective is met"),
	}}
	env := newWavesEnv(queueApartLimits(), w)
	var during CampaignStatus
	env.RegisterDelayedCallback(func() { during = campaignStatus(t, env) }, 30*time.Second)
	res := runCampaign(t, env, `{"objective":"make the parser fast","verifyCommand":"make check","maxParallel":3,"maxTokens":90000}`)

	if res.Status != CampaignComplete || len(res.Waves) != 2 || res.Waves[1].Verify != "passed" || res.Waves[0].Status != plan.StatusTasks ||
		strings.Join(res.Waves[0].Tasks, ",") != "a,b,c" || res.Waves[1].Status != plan.StatusComplete {
		t.Fatalf("result %+v", res)
	}
	if len(w.landed) != 3 || slices.Index(w.landed, "c") < slices.Index(w.landed, "a") {
		t.Fatalf("landed %v, want c after a", w.landed)
	}
	for _, id := range []string{"camp/a", "camp/b", "camp/c"} {
		if s := w.starts[id]; s == nil || s.CampaignObjective != "make the parser fast" {
			t.Fatalf("%s started with %+v", id, s)
		}
	}
	first, second := w.inputs[0], w.inputs[1]
	// A planner's budget is a loop's share: the tokens left over maxParallel.
	if first.Report != nil || first.Objective != "make the parser fast" || first.Wave != 1 || first.Rules.MaxTasks != defaultMaxWaveTasks ||
		len(first.Rules.KnownIDs) != 0 || first.TokenBudget != 30000 || w.inputs[1].TokenBudget != (90000-110-3*15)/3 {
		t.Fatalf("first planner got %+v", first)
	}
	r := second.Report
	if second.Wave != 2 || r == nil || r.Wave != 1 || r.Summary != "split the parser" || len(r.Tasks) != 3 ||
		r.Tasks[2] != (plan.TaskOutcome{ID: "c", Outcome: TaskMerged, MergeCommit: "merge-c"}) ||
		strings.Join(second.Rules.MergedIDs, ",") != "a,b,c" || second.Head != "head-3" {
		t.Fatalf("second planner got %+v report %+v", second, r)
	}
	if len(w.verified) != 1 || w.verified[0].VerifyCommand != "make check" {
		t.Fatalf("head verifies %+v", w.verified)
	}
	// The campaign's usage holds the two planners' and the three loops'.
	if res.Usage.PromptTokens != 2*100+3*10 {
		t.Fatalf("usage %+v", res.Usage)
	}
	if during.Wave != 1 || during.Plan == nil || len(during.Plan.Tasks) != 3 || during.Plan.Tasks[2].DependsOn[0] != "a" ||
		during.PlannerUsage.PromptTokens != 100 || len(during.Waves) != 1 {
		t.Fatalf("status during wave 1: %+v", during.WaveStatus)
	}
}

// TestWavesRedHeadGoesToTheNextPlanner: a complete plan whose head verify
// fails ends the wave; the next planner's report carries the failure.
func TestWavesRedHeadGoesToTheNextPlanner(t *testing.T) {
	w := &waves{plans: []plan.Plan{completePlan("nothing to do"), tasksPlan("fix the test", Task{ID: "fix", Objective: "fix it"}),
		completePlan("fixed")}, verifies: []int{2}}
	env := newWavesEnv(queueApartLimits(), w)
	res := runCampaign(t, env, `{"objective":"keep it green","verifyCommand":"make check"}`)
	if res.Status != CampaignComplete || len(res.Waves) != 3 || res.Waves[0].Verify != "failed (exit 2)" || res.Waves[2].Verify != "passed" {
		t.Fatalf("result %+v", res)
	}
	v := w.inputs[1].Report.Verify
	if v == nil || v.ExitCode != 2 || v.Command != "make check" || v.Head != "head-0" || !strings.HasSuffix(v.OutputTail, "exit 2 at the end") ||
		len([]rune(v.OutputTail)) > verifyTailChars {
		t.Fatalf("second planner's report %+v verify %+v", w.inputs[1].Report, v)
	}
	if r := w.inputs[2].Report; r == nil || r.Verify != nil || len(r.Tasks) != 1 || r.Tasks[0].Outcome != TaskMerged {
		t.Fatalf("third planner's report %+v", r)
	}
}

// TestWavesBlockedPlanner: a blocked plan ends the campaign blocked with
// the blocker; a blocked task of a wave reaches the next planner's report.
func TestWavesBlockedPlanner(t *testing.T) {
	w := &waves{plans: []plan.Plan{tasksPlan("try", Task{ID: "blocked-x", Objective: "x"}, Task{ID: "y", Objective: "y", DependsOn: []string{"blocked-x"}}),
		{Status: plan.StatusBlocked, Summary: "stuck", Blocker: "the API key is missing from the repository"}}}
	env := newWavesEnv(queueApartLimits(), w)
	res := runCampaign(t, env, `{"objective":"call the API","verifyCommand":"make check"}`)
	if res.Status != CampaignBlocked || res.Blocker != "the API key is missing from the repository" || len(res.Waves) != 2 || len(w.verified) != 0 {
		t.Fatalf("result %+v", res)
	}
	r := w.inputs[1].Report
	if r == nil || r.Tasks[0].Outcome != TaskBlocked || !strings.Contains(r.Tasks[0].Failure, "the API key is missing") ||
		r.Tasks[1].Outcome != TaskBlocked || !strings.Contains(r.Tasks[1].Failure, "dependency blocked-x ended blocked") {
		t.Fatalf("second planner's report %+v", r)
	}
}

// TestWavesEndPartialAtMaxWaves: planners that always plan more work end
// the campaign partial after maxWaves waves.
func TestWavesEndPartialAtMaxWaves(t *testing.T) {
	w := &waves{}
	for i := range 5 {
		w.plans = append(w.plans, tasksPlan(fmt.Sprint("more ", i), Task{ID: fmt.Sprintf("t%d", i), Objective: "more"}))
	}
	env := newWavesEnv(queueApartLimits(), w)
	res := runCampaign(t, env, `{"objective":"endless","verifyCommand":"make check","maxWaves":2}`)
	if res.Status != CampaignPartial || len(res.Waves) != 2 || len(w.inputs) != 2 || len(res.Tasks) != 2 || res.Tasks[1].Phase != TaskMerged {
		t.Fatalf("result %+v after %d planners", res, len(w.inputs))
	}
}

// TestWavesPlanApproval: with approve plan each plan waits: a rejection
// runs a new planner with the reason; a bad replacement list is refused
// naming the rule; a good one runs instead of the plan; approve {} runs the
// next wave's complete plan, which is verified.
func TestWavesPlanApproval(t *testing.T) {
	w := &waves{plans: []plan.Plan{
		tasksPlan("first try", Task{ID: "a", Objective: "do a"}),
		tasksPlan("second try", Task{ID: "a", Objective: "do a better"}),
		completePlan("done"),
	}}
	limits := queueApartLimits()
	limits.NotifyEvents = []string{workflows.EventAwaitingApproval}
	env := newWavesEnv(limits, w)
	var mu sync.Mutex
	var events []string
	onNotify(env, func(in activities.NotifyInput) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, fmt.Sprintf("%s@%d/%d %s: %s", in.Event, in.Round, in.Seq, in.Status, in.Text))
	})
	var waiting, waiting2 CampaignStatus
	var planned WavePlan
	env.RegisterDelayedCallback(func() {
		waiting = campaignStatus(t, env)
		v, err := env.QueryWorkflow(QueryPlan)
		if err != nil {
			t.Error(err)
			return
		}
		_ = v.Get(&planned)
	}, time.Minute)
	noTask := sendUpdate(env, 61*time.Second, workflows.UpdateApprove, TaskRequest{Task: "a"})
	noReason := sendUpdate(env, 62*time.Second, workflows.UpdateReject, RejectRequest{})
	rejected := sendUpdate(env, 63*time.Second, workflows.UpdateReject, RejectRequest{Reason: "split it in two"})
	env.RegisterDelayedCallback(func() { waiting2 = campaignStatus(t, env) }, 2*time.Minute)
	cycle := sendUpdate(env, 2*time.Minute+time.Second, workflows.UpdateApprove, TaskRequest{Tasks: []Task{
		{ID: "p", Objective: "p", DependsOn: []string{"q"}}, {ID: "q", Objective: "q", DependsOn: []string{"p"}}}})
	badID := sendUpdate(env, 2*time.Minute+2*time.Second, workflows.UpdateApprove, TaskRequest{Tasks: []Task{{ID: "Bad_ID", Objective: "p"}}})
	replaced := sendUpdate(env, 2*time.Minute+3*time.Second, workflows.UpdateApprove, TaskRequest{Tasks: []Task{
		{ID: "p", Objective: "do p"}, {ID: "q", Objective: "do q", DependsOn: []string{"p"}}}})
	approved := sendUpdate(env, 10*time.Minute, workflows.UpdateApprove, TaskRequest{})
	res := runCampaign(t, env, `{"objective":"ship it","verifyCommand":"make check","approve":"plan"}`)

	if waiting.Phase != PhaseAwaitingPlanApproval || waiting.Plan == nil || !waiting.Plan.AwaitingApproval || waiting.Plan.Summary != "first try" ||
		len(planned.Tasks) != 1 || planned.Tasks[0].Objective != "do a" {
		t.Fatalf("first wait: %+v %+v, plan query %+v", waiting.Phase, waiting.Plan, planned)
	}
	if noTask.rejected == nil || !strings.Contains(noTask.rejected.Error(), `task "a" is no task`) ||
		noReason.rejected == nil || !strings.Contains(noReason.rejected.Error(), "it guides the next planning round") || rejected.rejected != nil {
		t.Fatalf("answers: %v / %v / %v", noTask.rejected, noReason.rejected, rejected.rejected)
	}
	if w.inputs[1].Guidance != "split it in two" || w.inputs[1].Wave != 1 || w.inputs[2].Guidance != "" {
		t.Fatalf("planners got guidance %q (wave %d), then %q", w.inputs[1].Guidance, w.inputs[1].Wave, w.inputs[2].Guidance)
	}
	if waiting2.Plan == nil || waiting2.Plan.Summary != "second try" {
		t.Fatalf("second wait: %+v", waiting2.Plan)
	}
	// The refusals name the rule (plan.Validate's words, or the task list's).
	if cycle.rejected == nil || !strings.Contains(cycle.rejected.Error(), "cycle") || !strings.Contains(cycle.rejected.Error(), "p -> q -> p") ||
		badID.rejected == nil || !strings.Contains(badID.rejected.Error(), "tasks[0]") || !strings.Contains(badID.rejected.Error(), "63") ||
		replaced.rejected != nil || approved.rejected != nil {
		t.Fatalf("approvals: cycle %v, bad id %v, replaced %v, approved %v", cycle.rejected, badID.rejected, replaced.rejected, approved.rejected)
	}
	if len(events) != 3 || events[0] != "awaiting-approval@0/1 awaiting-plan-approval: Campaign camp: wave 1's plan (tasks, 1 tasks) awaits approval: `first try`" ||
		!strings.HasPrefix(events[2], "awaiting-approval@0/3 awaiting-plan-approval: Campaign camp: wave 2's plan (complete, 0 tasks)") {
		t.Fatalf("notifications %q", events)
	}
	if res.Status != CampaignComplete || strings.Join(w.landed, ",") != "p,q" || len(res.Waves) != 2 ||
		res.Waves[0].Approval != "replaced" || strings.Join(res.Waves[0].Tasks, ",") != "p,q" || res.Waves[1].Approval != "approved" {
		t.Fatalf("result %+v, landed %v", res, w.landed)
	}
}

// TestWavesStopEndsAPlanWait: a stop ends a plan's approval wait: the
// campaign ends stopped.
func TestWavesStopEndsAPlanWait(t *testing.T) {
	w := &waves{plans: []plan.Plan{tasksPlan("try", Task{ID: "a", Objective: "do a"})}}
	env := newWavesEnv(queueApartLimits(), w)
	sendUpdate(env, time.Minute, workflows.UpdateStop, workflows.StopRequest{Reason: "not now"})
	res := runCampaign(t, env, `{"objective":"ship it","verifyCommand":"make check","approve":"plan,merge"}`)
	if res.Status != CampaignStopped || len(res.Waves) != 1 || res.Waves[0].Approval != "stopped" || len(res.Tasks) != 0 {
		t.Fatalf("result %+v", res)
	}
}

// TestWavesContinueAsNewInTheMiddleOfAWave: a continue-as-new during wave
// 2's loops carries the wave, its tasks whole, wave 1's tasks without their
// objectives, and wave 1's report; the continued run finishes the wave and
// hands the report on.
func TestWavesContinueAsNewInTheMiddleOfAWave(t *testing.T) {
	w := &waves{plans: []plan.Plan{
		tasksPlan("one", Task{ID: "a", Objective: "do a"}),
		tasksPlan("two", Task{ID: "b", Objective: "do b", DependsOn: []string{"a"}}, Task{ID: "c", Objective: "do c"}),
		completePlan("done"),
	}, loopTime: 10 * time.Minute}
	env := newWavesEnv(queueApartLimits(), w)
	// Wave 2's loops start at about 10 minutes and take 10.
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 15*time.Minute)
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(`{"objective":"o","verifyCommand":"make check","maxParallel":1}`), (*CampaignContinuation)(nil))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want a continue-as-new, got %v", err)
	}
	var k CampaignContinuation
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &k); err != nil {
		t.Fatal(err)
	}
	phases := map[string]taskState{}
	for _, task := range k.Tasks {
		phases[task.Task.ID] = task
	}
	if k.Wave == nil || k.Wave.Number != 2 || k.Wave.Ended || k.Wave.Report == nil || k.Wave.Report.Wave != 1 ||
		len(k.Wave.History) != 2 || strings.Join(k.Wave.History[1].Tasks, ",") != "b,c" || k.Settings.Objective != "o" {
		t.Fatalf("carried waves %+v", k.Wave)
	}
	// maxParallel 1: c ran (b waits for nothing but a, which merged; the
	// list order starts b first) — whichever ran, the other waits whole.
	if phases["a"].Phase != TaskMerged || phases["a"].Task.Objective != "" || phases["b"].Task.Objective != "do b" || phases["c"].Task.Objective != "do c" {
		t.Fatalf("carried tasks %+v", phases)
	}

	// The continued run ends wave 2, reports it and completes.
	w2 := &waves{plans: []plan.Plan{completePlan("done")}}
	env2 := newWavesEnv(queueApartLimits(), w2)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(nil), &k)
	var res CampaignResult
	if err := env2.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	r := w2.inputs[0].Report
	if res.Status != CampaignComplete || len(w2.inputs) != 1 || w2.inputs[0].Wave != 3 || r == nil || r.Wave != 2 || len(r.Tasks) != 2 ||
		r.Tasks[0].Outcome != TaskMerged || r.Tasks[1].Outcome != TaskMerged || len(res.Waves) != 3 {
		t.Fatalf("continued result %+v, planner %+v", res, w2.inputs)
	}
}

// TestWavesOf20Waves30TasksStayBounded measures a campaign of 20 waves of
// 30 tasks (objectives of 1,000 characters, summaries of 2,000, every
// fifth task blocked): the status within 64 KiB listing 20 waves, each
// planner's report within the handoff cap, and the continuation carried in
// the last wave well under 1 MiB, earlier waves' objectives left out.
func TestWavesOf20Waves30TasksStayBounded(t *testing.T) {
	const nWaves, nTasks = 20, 30
	w := &waves{}
	for i := 1; i <= nWaves; i++ {
		var tasks []Task
		for j := 1; j <= nTasks; j++ {
			id := fmt.Sprintf("w%02d-t%02d", i, j)
			if j%5 == 0 {
				id = fmt.Sprintf("blocked-w%02d-t%02d", i, j)
			}
			task := Task{ID: id, Objective: strings.Repeat(string(rune('a'+j%26)), 1000)}
			if j > 1 && j%5 != 1 {
				task.DependsOn = []string{tasks[j-2].ID}
			}
			tasks = append(tasks, task)
		}
		w.plans = append(w.plans, tasksPlan(strings.Repeat("s", 2000), tasks...))
	}
	limits := queueApartLimits()
	env := newWavesEnv(limits, w)
	var status CampaignStatus
	statusBytes := 0
	// A wave's loops take about 5 minutes (chains of 5, a minute each):
	// look every minute and ask for the continue-as-new once the last
	// wave's loops run.
	for m := 1; m < 2*5*nWaves; m++ {
		env.RegisterDelayedCallback(func() {
			if statusBytes > 0 {
				return
			}
			if s := campaignStatus(t, env); s.Wave == nWaves && s.Counts[TaskRunning] > 0 {
				status, statusBytes = s, encodedSize(s)
				env.SetContinueAsNewSuggested(true)
			}
		}, time.Duration(m)*time.Minute+30*time.Second)
	}
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(`{"objective":"o","verifyCommand":"make check","maxParallel":8,"maxWaves":20}`),
		(*CampaignContinuation)(nil))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want a continue-as-new, got %v", err)
	}
	carried := len(can.Input.GetPayloads()[1].GetData())
	var k CampaignContinuation
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &k); err != nil {
		t.Fatal(err)
	}
	reportChars := 0
	for _, in := range w.inputs {
		if in.Report != nil {
			raw, _ := json.Marshal(in.Report)
			reportChars = max(reportChars, len([]rune(string(raw))))
		}
	}
	t.Logf("wave %d: status %d bytes (%d waves listed), continuation %d bytes for %d tasks, largest wave report %d chars",
		status.Wave, statusBytes, len(status.Waves), carried, len(k.Tasks), reportChars)
	if status.Wave != nWaves || len(status.Waves) != maxWavesListed || statusBytes > maxStatusBytes || encodedSize(status.WaveStatus) > maxWaveStatusBytes {
		t.Fatalf("status of wave %d: %d bytes, %d waves", status.Wave, statusBytes, len(status.Waves))
	}
	if len(k.Tasks) != nWaves*nTasks || k.Wave.Number != nWaves || len(k.Wave.History) != nWaves || carried > 256<<10 {
		t.Fatalf("carried %d bytes: %d tasks, wave %+v", carried, len(k.Tasks), k.Wave.Number)
	}
	if reportChars == 0 || reportChars > limits.MaxHandoffChars || len(w.inputs[nWaves-1].Report.Tasks) != nTasks {
		t.Fatalf("wave reports up to %d chars (cap %d)", reportChars, limits.MaxHandoffChars)
	}
}

// TestWavesPlannerFailureAndApprovalTimeout: a planner that fails (no
// retry helps) ends the campaign partial naming why; a plan nobody answers
// within RALPH_APPROVAL_TIMEOUT_HOURS ends it stopped.
func TestWavesPlannerFailureAndApprovalTimeout(t *testing.T) {
	env := newCampaignEnv(queueApartLimits())
	env.RegisterActivityWithOptions(func(context.Context, activities.PlanWaveInput) (activities.PlanWaveOutput, error) {
		return activities.PlanWaveOutput{}, temporal.NewNonRetryableApplicationError("the planner submitted no valid plan in 3 tries", activities.ErrTypeChildFailed, nil)
	}, activity.RegisterOptions{Name: activities.PlanWaveName})
	res := runCampaign(t, env, `{"objective":"o","verifyCommand":"make check"}`)
	if res.Status != CampaignPartial || len(res.Waves) != 1 || res.Waves[0].Status != WaveFailed ||
		!strings.Contains(res.Waves[0].Summary, "the planner submitted no valid plan in 3 tries") {
		t.Fatalf("result %+v", res)
	}

	limits := queueApartLimits()
	limits.ApprovalTimeoutHours = 2
	w := &waves{plans: []plan.Plan{tasksPlan("try", Task{ID: "a", Objective: "do a"})}}
	env = newWavesEnv(limits, w)
	var before CampaignStatus
	env.RegisterDelayedCallback(func() { before = campaignStatus(t, env) }, 119*time.Minute)
	res = runCampaign(t, env, `{"objective":"o","verifyCommand":"make check","approve":"plan"}`)
	if before.Phase != PhaseAwaitingPlanApproval || res.Status != CampaignStopped || len(res.Waves) != 1 || res.Waves[0].Approval != "timed-out" ||
		len(res.Tasks) != 0 {
		t.Fatalf("before the timeout %s; result %+v", before.Phase, res)
	}
}

// TestWavesPlanAndMergeApprovals: with approve "plan,merge" the plan waits
// for approve {} and each merge for approve {"task"}, as before.
func TestWavesPlanAndMergeApprovals(t *testing.T) {
	w := &waves{plans: []plan.Plan{tasksPlan("one task", Task{ID: "a", Objective: "do a"}), completePlan("done")}}
	env := newWavesEnv(queueApartLimits(), w)
	var held CampaignStatus
	plan1 := sendUpdate(env, time.Minute, workflows.UpdateApprove, TaskRequest{})
	env.RegisterDelayedCallback(func() { held = campaignStatus(t, env) }, 5*time.Minute)
	planAsMerge := sendUpdate(env, 5*time.Minute+time.Second, workflows.UpdateApprove, TaskRequest{})
	merge := sendUpdate(env, 5*time.Minute+2*time.Second, workflows.UpdateApprove, TaskRequest{Task: "a"})
	plan2 := sendUpdate(env, 10*time.Minute, workflows.UpdateApprove, TaskRequest{})
	res := runCampaign(t, env, `{"objective":"o","verifyCommand":"make check","approve":"plan,merge"}`)
	if plan1.rejected != nil || merge.rejected != nil || plan2.rejected != nil || planAsMerge.rejected == nil ||
		!strings.Contains(planAsMerge.rejected.Error(), "no wave's plan awaits approval") {
		t.Fatalf("answers: %v %v %v %v", plan1.rejected, planAsMerge.rejected, merge.rejected, plan2.rejected)
	}
	if held.Counts[TaskAwaitingApproval] != 1 || held.Phase != workflows.PhaseRunning {
		t.Fatalf("while the merge was held: %+v", held)
	}
	if res.Status != CampaignComplete || res.Tasks[0].MergeCommit != "tip-a" || len(res.Waves) != 2 {
		t.Fatalf("result %+v", res)
	}
}
