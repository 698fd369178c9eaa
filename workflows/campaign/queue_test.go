package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// mergeMinutes is how long every stubbed merge (and its verify) takes.
const mergeMinutes = 10

// slowQueue plays a merge queue whose every merge takes mergeMinutes of the
// test clock, and loops that take loopMinutes[task] (1 unless named),
// recording when each loop started and ended and the merges' order.
type slowQueue struct {
	mu          sync.Mutex
	loopMinutes map[string]int
	started     map[string]time.Duration
	ended       map[string]time.Duration
	cancelled   map[string]bool
	merges      []string
	begin       time.Time
}

func newSlowQueue(env *testsuite.TestWorkflowEnvironment, loopMinutes map[string]int) *slowQueue {
	q := &slowQueue{loopMinutes: loopMinutes, started: map[string]time.Duration{}, ended: map[string]time.Duration{}, cancelled: map[string]bool{}}
	merge := func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		q.mu.Lock()
		defer q.mu.Unlock()
		out := activities.MergeTaskOutput{Outcome: activities.MergeLanded, Verification: &report.Verification{Command: in.VerifyCommand}}
		for _, t := range in.Tasks {
			q.merges = append(q.merges, t.ID)
			out.Merged = append(out.Merged, activities.MergedTask{ID: t.ID, Commit: "m-" + t.ID})
		}
		out.Head = "head-" + strings.Join(q.merges, "-")
		return out, nil
	}
	onMerge(env, merge)
	env.OnActivity(activities.MergeTaskName, mock.Anything, mock.Anything).After(mergeMinutes * time.Minute).Return(merge)
	onLoop(env, q.child)
	return q
}

func (q *slowQueue) child(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
	task := strings.Split(workflow.GetInfo(ctx).WorkflowExecution.ID, "/")[1]
	q.mu.Lock()
	if q.begin.IsZero() {
		q.begin = workflow.Now(ctx) // the first loop starts with the campaign
	}
	q.started[task] = workflow.Now(ctx).Sub(q.begin)
	minutes := max(q.loopMinutes[task], 1)
	q.mu.Unlock()
	err := workflow.Sleep(ctx, time.Duration(minutes)*time.Minute)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.cancelled[task] = true
		return nil, err
	}
	q.ended[task] = workflow.Now(ctx).Sub(q.begin)
	return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: task + "@1"}}, nil
}

// TestQueueRunsBesideTheLoops (SPEC 39): while a's merge runs for ten
// minutes, c's loop and then e's take the places a's and c's left
// (maxParallel 2 stays busy), b's, c's and e's loops end, an add-tasks
// update is answered at once and its task d starts; the merges land one
// after the other in the order the loops completed. A campaign recorded
// before CampaignQueueApart keeps the queue inside its main loop: no loop
// starts until a's merge returns.
func TestQueueRunsBesideTheLoops(t *testing.T) {
	for _, apart := range []bool{true, false} {
		t.Run(fmt.Sprintf("apart=%v", apart), func(t *testing.T) {
			limits := queueApartLimits()
			limits.CampaignQueueApart = apart
			env := newCampaignEnv(limits)
			q := newSlowQueue(env, map[string]int{"a": 1, "b": 4, "c": 2, "e": 2})
			var addedAt time.Duration
			var addErr error
			env.RegisterDelayedCallback(func() {
				env.UpdateWorkflow(UpdateAddTasks, "add", &testsuite.TestUpdateCallback{
					OnReject: func(err error) { addErr = err },
					OnAccept: func() {},
					OnComplete: func(_ any, err error) {
						addErr, addedAt = err, env.Now().Sub(q.begin)
					},
				}, AddTasksRequest{Tasks: []Task{{ID: "d", Objective: "d"}}})
			}, 5*time.Minute)
			var during CampaignStatus
			env.RegisterDelayedCallback(func() {
				v, err := env.QueryWorkflow(workflows.StatusQueryName)
				if err == nil {
					err = v.Get(&during)
				}
				if err != nil {
					t.Error(err)
				}
			}, 5*time.Minute+30*time.Second)
			in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"},{"id":"e","objective":"e"}],"verifyCommand":"check","maxParallel":2}`
			res := runCampaign(t, env, in)
			if res.Status != CampaignComplete {
				t.Fatalf("result %+v", res)
			}
			if addErr != nil || addedAt != 5*time.Minute {
				t.Fatalf("add-tasks answered at %s: %v", addedAt, addErr)
			}
			t.Logf("loops started %v, ended %v; merges %v; campaign took %s", q.started, q.ended, q.merges, env.Now().Sub(q.begin))
			mergeEnds := time.Duration(1+mergeMinutes) * time.Minute // a's merge: from a's end to here
			if !apart {
				// c took a's place before the merge began; then nothing
				// started during it: e and d waited for it.
				if q.started["c"] != time.Minute || q.started["e"] != mergeEnds || q.started["d"] != mergeEnds || fmt.Sprint(q.merges) != "[a c b d e]" {
					t.Fatalf("before CampaignQueueApart: started %v, merges %v", q.started, q.merges)
				}
				return
			}
			// During a's merge (1 to 11 minutes): c took a's place, e took
			// c's, two loops ran until b ended, d started when added.
			want := map[string]time.Duration{"a": 0, "b": 0, "c": time.Minute, "d": 5 * time.Minute, "e": 3 * time.Minute}
			if fmt.Sprint(q.started) != fmt.Sprint(want) {
				t.Fatalf("loops started at %v, want %v", q.started, want)
			}
			if q.ended["c"] != 3*time.Minute || q.ended["b"] != 4*time.Minute || q.ended["e"] != 5*time.Minute || q.ended["d"] != 6*time.Minute {
				t.Fatalf("loops ended at %v", q.ended)
			}
			if during.Counts[TaskMerging] != 1 || during.Counts[TaskRunning] != 1 || during.Counts[TaskQueued] != 3 {
				t.Fatalf("at 5m30s: %v", during.Counts)
			}
			// The merges land one after the other in the order the loops
			// completed: a, c, b, e, d.
			if fmt.Sprint(q.merges) != "[a c b e d]" || env.Now().Sub(q.begin) != (1+5*mergeMinutes)*time.Minute {
				t.Fatalf("merges %v, campaign took %s", q.merges, env.Now().Sub(q.begin))
			}
			for _, task := range res.Tasks {
				if task.Phase != TaskMerged || task.MergeCommit != "m-"+task.ID {
					t.Fatalf("result %+v", res)
				}
			}
		})
	}
}

// TestQueueApartCancelledDuringAMerge: a cancel while a's merge runs beside
// the loops ends the campaign cancelled at once: the running loops take the
// cancel, the merge is cancelled (it does not land), nothing waits out its
// ten minutes.
func TestQueueApartCancelledDuringAMerge(t *testing.T) {
	env := newCampaignEnv(queueApartLimits())
	q := newSlowQueue(env, map[string]int{"a": 1, "b": 60, "c": 60})
	env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Minute)
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"}],"verifyCommand":"check","maxParallel":2}`
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(in), (*CampaignContinuation)(nil))
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err = %v, want cancelled", err)
	}
	took := env.Now().Sub(q.begin)
	t.Logf("cancelled after %s; loops started %v; merges %v", took, q.started, q.merges)
	// c started during a's merge; b and c took the cancel; a never landed.
	if q.started["c"] != time.Minute || fmt.Sprint(q.cancelled) != "map[b:true c:true]" || len(q.merges) != 0 || took != 5*time.Minute {
		t.Fatalf("cancelled after %s; started %v; cancelled loops %v; merges %v", took, q.started, q.cancelled, q.merges)
	}
}

// TestQueueApartContinuesAsNewAfterTheMerge: continue-as-new suggested
// while a's merge runs starts no more loops and waits for that merge to
// return (and for the queue to land what queued meanwhile): no task is
// carried merging, d is carried waiting.
func TestQueueApartContinuesAsNewAfterTheMerge(t *testing.T) {
	env := newCampaignEnv(queueApartLimits())
	q := newSlowQueue(env, map[string]int{"a": 1, "b": 2})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 90*time.Second)
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"},{"id":"d","objective":"d"}],"verifyCommand":"check","maxParallel":2}`
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(in), (*CampaignContinuation)(nil))
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("want the campaign to continue as new, got %v", err)
	}
	var k CampaignContinuation
	if err := converter.GetDefaultDataConverter().FromPayload(can.Input.GetPayloads()[1], &k); err != nil {
		t.Fatal(err)
	}
	phases := map[string]string{}
	for _, task := range k.Tasks {
		phases[task.Task.ID] = task.Phase
	}
	took := env.Now().Sub(q.begin)
	t.Logf("continued as new after %s carrying %v; merges %v", took, phases, q.merges)
	// a merged (1-11 min); c, started at 1 min before the suggestion came,
	// and b ended at 2 min and merged after (11-31); d never started.
	if len(k.Queue) != 0 || phases["a"] != TaskMerged || phases["b"] != TaskMerged || phases["c"] != TaskMerged ||
		phases["d"] != TaskWaiting || !k.Limits.CampaignQueueApart || took != (1+3*mergeMinutes)*time.Minute {
		t.Fatalf("after %s carried %v, queue %v, limits %+v", took, phases, k.Queue, k.Limits)
	}
	for id, p := range phases {
		if p == TaskMerging || p == TaskRunning {
			t.Fatalf("task %s carried %s", id, p)
		}
	}
}
