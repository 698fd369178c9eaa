package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/tasklist"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
	"go.temporal.io/sdk/temporal"
)

// Measured sizes of the 5,000-task campaign below (docs/campaigns.md,
// "Capacity"); the test fails when a payload grows past its bound.
const (
	capacityTasks          = 5000
	capacityObjectiveChars = 4000
)

// payloadMeter records the largest encoded payload of each kind.
type payloadMeter struct {
	mu  sync.Mutex
	max map[string]int
}

func (m *payloadMeter) see(kind string, values ...any) {
	p, err := converter.GetDefaultDataConverter().ToPayloads(values...)
	if err != nil {
		panic(err)
	}
	n := 0
	for _, pl := range p.GetPayloads() {
		n += len(pl.GetData())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.max[kind] = max(m.max[kind], n)
}

// TestCampaignOf5000TasksStaysUnder1MiB: 5,000 tasks with 4,000-character
// objectives from a Markdown tasks file on disk, every activity stubbed:
// every payload the campaign makes (activity inputs and outputs, child
// inputs, query answers, the continuation and the result) is measured
// under 1 MiB, the status summary under 64 KiB.
func TestCampaignOf5000TasksStaysUnder1MiB(t *testing.T) {
	dir := t.TempDir()
	var md strings.Builder
	for i := range capacityTasks {
		fmt.Fprintf(&md, "- [ ] t%04d: %s\n", i, strings.Repeat(string(rune('a'+i%26)), capacityObjectiveChars))
	}
	path := filepath.Join(dir, "tasks.md")
	if err := os.WriteFile(path, []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	t.Logf("tasks file: %d bytes", info.Size())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file, err := tasklist.Read("tasks.md", data, true)
	if err != nil {
		t.Fatal(err)
	}
	objectives := map[string]string{}
	for _, task := range file.Tasks {
		objectives[task.ID] = task.Objective
	}

	m := &payloadMeter{max: map[string]int{}}
	limits := activities.WithCurrentBehaviours(queueApartLimits()) // as a new campaign runs
	limits.MaxCampaignTasks, limits.MaxObjectiveChars, limits.MaxCampaignParallel = capacityTasks, 8000, 8
	env := newCampaignEnv(limits)
	// Checking 5,000 tasks takes the workflow about 15 ms (150 ms under the
	// race detector); a shared 2-core machine under -race can still pass
	// the SDK's 1 s deadlock clock, which measures wall time, not ours.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: 20 * time.Second})
	// ReadTasks' answer is made (and measured) once, outside the workflow:
	// the test environment runs a stub beside the workflow's deadlock clock.
	read, err := activities.TasksOutput(file, activities.TasksSource{Commit: strings.Repeat("b", 40), Path: "plan/tasks.md"})
	if err != nil {
		t.Fatal(err)
	}
	m.see("ReadTasks output", read)
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.ReadTasksInput) (activities.ReadTasksOutput, error) {
		m.see("ReadTasks input", in)
		return read, nil
	}, activity.RegisterOptions{Name: activities.ReadTasksName})
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.PrepareTaskInput) (activities.PrepareTaskOutput, error) {
		m.see("PrepareTask input", in)
		if in.From == nil {
			return activities.PrepareTaskOutput{}, errors.New("a file task was prepared without its source")
		}
		task := tasklist.Task{ID: in.Task.ID, Objective: objectives[in.Task.ID]}
		out := activities.PrepareTaskOutput{IntegrationHead: "h", TaskHead: "h", Task: &task}
		m.see("PrepareTask output", out)
		return out, nil
	}, activity.RegisterOptions{Name: activities.PrepareTaskName})
	var merges sync.Mutex
	landed := 0
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		m.see("MergeTask input", in)
		merges.Lock()
		defer merges.Unlock()
		out := activities.MergeTaskOutput{Outcome: activities.MergeLanded, Tip: strings.Repeat("c", 40),
			Verification: &report.Verification{Command: in.VerifyCommand, Output: strings.Repeat("ok\n", 2000)}}
		for _, task := range in.Tasks {
			landed++
			out.Merged = append(out.Merged, activities.MergedTask{ID: task.ID, Commit: fmt.Sprintf("%040d", landed)})
		}
		out.Head = fmt.Sprintf("%040d", landed)
		m.see("MergeTask output", out)
		return out, nil
	})
	onLoop(env, func(ctx workflow.Context, input json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
		m.see("child input", input, (*workflows.Continuation)(nil), start)
		var in map[string]any
		if err := json.Unmarshal(input, &in); err != nil || len([]rune(in[fieldObjective].(string))) != capacityObjectiveChars {
			return nil, fmt.Errorf("the task's loop got no %d-character objective: %v", capacityObjectiveChars, err)
		}
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		if err := workflow.Sleep(ctx, time.Minute); err != nil {
			return nil, err
		}
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Usage: usage.Usage{ModelCalls: 3, PromptTokens: 12345, CompletionTokens: 678},
			Checkpoint: &activities.Checkpoint{Commit: fmt.Sprintf("%040x", len(id)) + ""}}, nil
	})

	query := func(name string, args ...any) {
		v, err := env.QueryWorkflow(name, args...)
		if err != nil {
			t.Errorf("%s query: %v", name, err)
			return
		}
		var raw json.RawMessage
		if err := v.Get(&raw); err != nil {
			t.Fatal(err)
		}
		m.see(name+" query answer", raw)
	}
	// Queries while the first loops run; continue-as-new is suggested while
	// the second eight run, the first eight landed: the campaign moves
	// without waiting for its loops and carries every task.
	env.RegisterDelayedCallback(func() {
		query(workflows.StatusQueryName)
		query(QueryTasks, TasksRequest{Limit: maxPageTasks})
		query(QueryTasks, TasksRequest{Phase: TaskWaiting, After: "t0100"})
		query(QueryTask, TaskQuery{ID: "t2500"})
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 90*time.Second)
	in := map[string]any{"tasksFile": "plan/tasks.md", "verifyCommand": "make check", "maxParallel": 8, "mergeBatch": 8}
	m.see("input", in)
	started := time.Now()
	env.ExecuteWorkflow(CampaignWorkflowName, in, (*CampaignContinuation)(nil))
	t.Logf("%d tasks ran in %s", capacityTasks, time.Since(started))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want the campaign to continue as new, got %v", err)
	}
	cont := 0
	for _, p := range can.Input.GetPayloads() {
		cont += len(p.GetData())
	}
	m.max["continue-as-new input"] = cont
	var k CampaignContinuation
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &k); err != nil {
		t.Fatal(err)
	}
	phases := map[string]int{}
	for _, task := range k.Tasks {
		phases[task.Phase]++
		if task.Task.Objective != "" {
			t.Fatalf("task %s carried its objective", task.Task.ID)
		}
	}
	if len(k.Tasks) != capacityTasks || phases[TaskMerged] == 0 || phases[TaskRunning] == 0 || phases[TaskWaiting] == 0 || k.VerifyCount == 0 {
		t.Fatalf("carried %d tasks in phases %v, %d verifies of %d", len(k.Tasks), phases, len(k.Verifies), k.VerifyCount)
	}
	t.Logf("carried phases %v, %d verifies counted", phases, k.VerifyCount)

	// The measured numbers (docs/campaigns.md, "Capacity"): each is
	// asserted under its bound, and under a ceiling near what it measured,
	// so that growth shows here first.
	bounds := map[string]int{
		"input": 1 << 10, "ReadTasks output": 300 << 10, "PrepareTask output": 8 << 10,
		"child input": 8 << 10, "MergeTask input": 4 << 10, "MergeTask output": 16 << 10,
		workflows.StatusQueryName + " query answer": maxStatusBytes, QueryTasks + " query answer": 256 << 10,
		QueryTask + " query answer": 2 << 10, "continue-as-new input": 700 << 10,
	}
	for kind, bound := range bounds {
		got, ok := m.max[kind]
		switch {
		case !ok:
			t.Errorf("%s was never measured", kind)
		case got > bound || got > maxPayloadBytes:
			t.Errorf("%s is %d bytes, over %d", kind, got, bound)
		}
		t.Logf("largest %-28s %8d bytes", kind, got)
	}
	for kind, got := range m.max {
		if got > maxPayloadBytes {
			t.Errorf("%s is %d bytes, over 1 MiB", kind, got)
		}
	}
}

// TestCampaignWorstCaseStateStaysUnder1MiB: 5,000 tasks at the end of a
// hard campaign (every task merged after its third go, or blocked with a
// 2,000-character failure of characters JSON escapes, with usage): the
// continuation, the result and every query answer are measured within
// their bounds.
func TestCampaignWorstCaseStateStaysUnder1MiB(t *testing.T) {
	c := &campaign{limits: queueApartLimits(), byID: map[string]*taskState{}, settings: campaignSettings{ID: "camp",
		Branch: "ralph/campaigns/camp/integration", MaxParallel: 8, VerifyCommand: "make check", MaxMergeAttempts: 3, MergeBatch: 1, Approve: ApproveNone}}
	c.sources = []activities.TasksSource{{Commit: strings.Repeat("b", 40), Path: "plan/tasks.md"}}
	failure := strings.Repeat("<&>\x01", maxFailureChars/4)
	for i := range capacityTasks {
		s := &taskState{Task: Task{ID: fmt.Sprintf("t%04d", i)}, Source: 1, Phase: TaskMerged, Go: 3, Round: 12, MergeAttempts: 2,
			MergeCommit: fmt.Sprintf("%040d", i), Usage: usage.Usage{ModelCalls: 40, ToolCalls: 300, PromptTokens: 1234567, CompletionTokens: 98765}}
		if i%2 == 1 {
			s.Phase, s.MergeCommit, s.LastFailure, s.Commit = TaskBlocked, "", failure, fmt.Sprintf("%040x", i)
		}
		s.WorkflowID = workflowID(c.settings.ID, s)
		c.tasks = append(c.tasks, s)
		c.byID[s.Task.ID] = s
	}
	for range 30 {
		c.recordVerify(MergeVerify{Tasks: []string{"t0001"}, Commit: strings.Repeat("c", 40), ExitCode: 1})
	}
	sizes := map[string]int{}
	k := c.continuation()
	sizes["continuation"] = encodedSize(k)
	sizes["result"] = encodedSize(c.result(CampaignPartial))
	sizes["status"] = encodedSize(c.snapshot())
	p, err := c.page(TasksRequest{Limit: maxPageTasks})
	if err != nil {
		t.Fatal(err)
	}
	sizes["tasks page"] = encodedSize(p)
	d, err := c.detail(TaskQuery{ID: "t0001"})
	if err != nil {
		t.Fatal(err)
	}
	sizes["task"] = encodedSize(d)
	for kind, bound := range map[string]int{"continuation": maxPayloadBytes, "result": maxPayloadBytes, "status": maxStatusBytes,
		"tasks page": maxAnswerBytes, "task": 32 << 10} {
		if sizes[kind] > bound {
			t.Errorf("%s is %d bytes, over %d", kind, sizes[kind], bound)
		}
		t.Logf("%-12s %8d bytes", kind, sizes[kind])
	}
	if len(k.Verifies) != maxVerifiesKept || k.VerifyCount != 30 || k.VerifyFailed != 30 {
		t.Errorf("verifies: %d kept, %d counted, %d failed", len(k.Verifies), k.VerifyCount, k.VerifyFailed)
	}
	// The continuation round-trips: every task, the recent failures whole.
	raw, _ := json.Marshal(k)
	var back CampaignContinuation
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	// Failures were cut oldest first: the newest keeps its first 200
	// characters, the oldest none.
	if len(back.Tasks) != capacityTasks || back.Tasks[4999].LastFailure != failure[:cutFailureChars] || back.Tasks[4998].MergeCommit != fmt.Sprintf("%040d", 4998) ||
		back.Tasks[1].LastFailure != "" || back.Tasks[4999].Usage.PromptTokens != 1234567 {
		t.Fatalf("the continuation did not round-trip: %+v / %+v", back.Tasks[1], back.Tasks[4999])
	}
	// The status lists at most 100 tasks, counts every phase.
	st := c.snapshot()
	if len(st.Tasks)+st.Unlisted != capacityTasks/2 || st.Counts[TaskMerged] != capacityTasks/2 || len(st.Tasks) > maxStatusListed {
		t.Errorf("status listed %d, unlisted %d, counts %v", len(st.Tasks), st.Unlisted, st.Counts)
	}
}

// TestCarriedTaskReadsTheEarlierObjectForm: a continuation of the build
// before the compact form resumes.
func TestCarriedTaskReadsTheEarlierObjectForm(t *testing.T) {
	var s taskState
	err := json.Unmarshal([]byte(`{"task":{"id":"a","objective":"do a","dependsOn":["b"]},"phase":"returned","go":2,"round":3,"mergeAttempts":1,"lastFailure":"red","usage":{"promptTokens":5},"back":{"status":"continue"}}`), &s)
	if err != nil || s.Task.Objective != "do a" || s.Phase != TaskReturned || s.Go != 2 || s.LastFailure != "red" || s.Usage.PromptTokens != 5 {
		t.Fatalf("got %+v, %v", s, err)
	}
}

// TestInlineTasksOver1MiBAreRefused names the limit and tasksFile.
func TestInlineTasksOver1MiBAreRefused(t *testing.T) {
	limits := queueApartLimits()
	limits.MaxCampaignTasks, limits.MaxObjectiveChars = 5000, 8000
	var tasks []string
	for i := range 300 {
		tasks = append(tasks, fmt.Sprintf(`{"id":"t%d","objective":%q}`, i, strings.Repeat("x", 4000)))
	}
	raw := `{"tasks":[` + strings.Join(tasks, ",") + `],"verifyCommand":"make check"}`
	_, err := parseCampaignInput([]byte(raw), limits, "camp")
	if err == nil || !strings.Contains(err.Error(), "over the limit of 1048576 (1 MiB)") || !strings.Contains(err.Error(), "tasksFile") {
		t.Fatalf("err = %v", err)
	}
	// 5,000 tasks whose dependencies make the carried state too large.
	tasks = tasks[:0]
	for i := range 5000 {
		deps := make([]string, 0, 3)
		for d := 1; d <= 3 && i-d >= 0; d++ {
			deps = append(deps, fmt.Sprintf("%q", fmt.Sprintf("task-with-a-long-name-%04d", i-d)))
		}
		tasks = append(tasks, fmt.Sprintf(`{"id":"task-with-a-long-name-%04d","objective":"x","dependsOn":[%s]}`, i, strings.Join(deps, ",")))
	}
	raw = `{"tasks":[` + strings.Join(tasks, ",") + `],"verifyCommand":"make check"}`
	_, err = parseCampaignInput([]byte(raw), limits, "camp")
	if err == nil || !strings.Contains(err.Error(), "task state, over the limit of") {
		t.Fatalf("err = %v", err)
	}
	// Both, or neither, of tasks and tasksFile.
	for in, want := range map[string]string{
		`{"tasks":[{"id":"a","objective":"x"}],"tasksFile":"t.md","verifyCommand":"v"}`: "tasksFile: and tasks are both given",
		`{"verifyCommand":"v"}`:                       "tasksFile naming a task file",
		`{"tasksFile":"../t.md","verifyCommand":"v"}`: "not a clean path",
	} {
		if _, err := parseCampaignInput([]byte(in), limits, "camp"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", in, err, want)
		}
	}
}

// TestProtectedPathsReachTheLoopAndTheMerge: the campaign's protected paths
// and a task's own reach that task's loop input and its MergeTask input.
func TestProtectedPathsReachTheLoopAndTheMerge(t *testing.T) {
	env := newCampaignEnv(queueApartLimits())
	var mu sync.Mutex
	loops := map[string][]any{}
	var merged [][]string
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		merged = append(merged, in.ProtectedPaths)
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "h2",
			Merged: []activities.MergedTask{{ID: in.Tasks[0].ID, Commit: "m-" + in.Tasks[0].ID}}}, nil
	})
	onLoop(env, func(ctx workflow.Context, input json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		var in map[string]any
		_ = json.Unmarshal(input, &in)
		mu.Lock()
		loops[workflow.GetInfo(ctx).WorkflowExecution.ID], _ = in[fieldProtected].([]any)
		mu.Unlock()
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	in := `{"tasks":[{"id":"a","objective":"a","protectedPaths":["db/migrations/**"]},{"id":"b","objective":"b","dependsOn":["a"]}],
		"verifyCommand":"check","protectedPaths":[".github/**"]}`
	runCampaign(t, env, in)
	if fmt.Sprint(loops["camp/a"]) != "[.github/** db/migrations/**]" || fmt.Sprint(loops["camp/b"]) != "[.github/**]" {
		t.Fatalf("loops got %v", loops)
	}
	if fmt.Sprint(merged) != "[[.github/** db/migrations/**] [.github/**]]" {
		t.Fatalf("merges got %v", merged)
	}
}

// TestBudgetIsSharedAcrossLoops: with maxTokens 1000 and 4 loops at once,
// each loop gets 250, never the whole; loops that spend their shares spend
// the budget, and the campaign ends budget-limited without starting more.
// A campaign begun before shares (the limits record it) hands out the
// whole, as it did.
func TestBudgetIsSharedAcrossLoops(t *testing.T) {
	for _, shares := range []bool{true, false} {
		t.Run(fmt.Sprint("shares=", shares), func(t *testing.T) {
			f := &fakeLine{reports: map[string]*report.Report{}}
			limits := queueApartLimits()
			limits.CampaignShares = shares
			env := newCampaignEnv(limits)
			onMerge(env, f.merge)
			var mu sync.Mutex
			given := map[string]float64{}
			onLoop(env, func(ctx workflow.Context, input json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
				var in map[string]any
				_ = json.Unmarshal(input, &in)
				id := workflow.GetInfo(ctx).WorkflowExecution.ID
				tokens, _ := in[fieldMaxTokens].(float64)
				mu.Lock()
				given[id] = tokens
				mu.Unlock()
				if err := workflow.Sleep(ctx, time.Minute); err != nil {
					return nil, err
				}
				// Each loop spends what it was given (at most 250).
				return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Usage: usage.Usage{PromptTokens: min(int(tokens), 250)},
					Checkpoint: &activities.Checkpoint{Commit: strings.TrimPrefix(id, "camp/") + "@1"}}, nil
			})
			var tasks []string
			for i := range 8 {
				tasks = append(tasks, fmt.Sprintf(`{"id":"t%d","objective":"o"}`, i))
			}
			in := `{"tasks":[` + strings.Join(tasks, ",") + `],"verifyCommand":"check","maxParallel":4,"maxTokens":1000}`
			res := runCampaign(t, env, in)
			want := 250.0
			if !shares {
				want = 1000
			}
			for _, id := range []string{"camp/t0", "camp/t1", "camp/t2", "camp/t3"} {
				if given[id] != want {
					t.Errorf("%s was given %v tokens, want %v (all: %v)", id, given[id], want, given)
				}
			}
			t.Logf("given %v; %s with %d tokens spent", given, res.Status, res.Usage.PromptTokens)
			// A loop started later gets a share of what is left then.
			if shares {
				for id, n := range given {
					if n > 250 || n < 1 {
						t.Errorf("%s was given %v tokens", id, n)
					}
				}
				if len(given) == 8 || res.Status != CampaignBudgetLimited || res.Usage.PromptTokens > 1000+3*250 {
					t.Fatalf("given %v; result %s with %d tokens spent", given, res.Status, res.Usage.PromptTokens)
				}
			}
		})
	}
}

// A loop that fails after spending charges the campaign its whole run, not
// only the failed round (SPEC 39: a failed loop's usage counts).
func TestFailedLoopChargesItsWholeRun(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	env := newCampaignEnv(queueApartLimits())
	onMerge(env, f.merge)
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		return nil, temporal.NewNonRetryableApplicationError("round 3 failed", workflows.ErrTypeRoundFailed, nil,
			workflows.RoundFailedDetails{FailedRound: 3, Usage: usage.Usage{PromptTokens: 7}, RunUsage: usage.Usage{PromptTokens: 207, CompletionTokens: 40}})
	})
	res := runCampaign(t, env, `{"tasks":[{"id":"a","objective":"o"}],"verifyCommand":"check"}`)
	if res.Usage.PromptTokens != 207 || res.Usage.CompletionTokens != 40 {
		t.Fatalf("campaign usage = %+v, want the failed run's whole 207/40", res.Usage)
	}
}

// TestCampaignStatusWithFullLanesFits: the most lanes a worker allows
// (RALPH_MAX_MERGE_LANES' ceiling), each verifying a stack of the largest
// mergeBatch of the longest task ids, beside 5,000 listed-phase tasks: the
// status summary still fits within 64 KiB, each lane listing its first
// task ids and its count.
func TestCampaignStatusWithFullLanesFits(t *testing.T) {
	c := &campaign{limits: queueApartLimits(), byID: map[string]*taskState{}, settings: campaignSettings{ID: "camp",
		Branch: "ralph/campaigns/camp/integration", MaxParallel: 8, VerifyCommand: "make check", MaxMergeAttempts: 3,
		MergeBatch: maxMergeBatchCeiling, MergeLanes: 16, Approve: ApproveNone}}
	for i := range capacityTasks {
		s := &taskState{Task: Task{ID: fmt.Sprintf("%s%05d", strings.Repeat("t", 58), i)}, Phase: TaskMerging}
		c.tasks = append(c.tasks, s)
		c.byID[s.Task.ID] = s
	}
	for n := range 16 {
		l := &lane{n: n + 1, batch: c.tasks[n*maxMergeBatchCeiling : (n+1)*maxMergeBatchCeiling], onto: strings.Repeat("a", 40), merged: true}
		l.merge.Tip, l.merge.Outcome = strings.Repeat("b", 40), activities.MergeHeld
		c.lanes = append(c.lanes, l)
	}
	s := c.snapshot()
	if size := encodedSize(s); size > maxStatusBytes || len(s.Lanes) != 16 || len(s.Lanes[0].Tasks) != maxLaneTasksListed ||
		s.Lanes[0].TaskCount != maxMergeBatchCeiling || s.Lanes[15].State != laneVerifying {
		t.Fatalf("status of %d bytes (bound %d), lanes %d, first %+v", size, maxStatusBytes, len(s.Lanes), s.Lanes[0])
	}
}
