package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// loopPlay is a task loop as CheckTaskLoops sees it: it ends as its input
// says — completes with a Ralph result (after one continue-as-new when
// asked), fails or is cancelled carrying its run's usage — or waits.
func loopPlay(ctx workflow.Context, how string) (*workflows.Result, error) {
	spent := usage.Usage{ModelCalls: 2, PromptTokens: 300}
	switch how {
	case "complete-after-move":
		return nil, workflow.NewContinueAsNewError(ctx, "LoopPlay", "complete")
	case "complete":
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 2, Usage: spent, Checkpoint: &activities.Checkpoint{Commit: "abc123"}}, nil
	case "fail":
		return nil, temporal.NewNonRetryableApplicationError("round 2 failed: model said 401", workflows.ErrTypeRoundFailed, nil,
			workflows.RoundFailedDetails{RunUsage: spent})
	}
	if err := workflow.Await(ctx, func() bool { return false }); err != nil {
		if how == "cancel" {
			return nil, temporal.NewCanceledError(workflows.CancelledDetails{Round: 1, RunUsage: spent})
		}
		return nil, err
	}
	return nil, nil
}

// TestRealStackCheckTaskLoopsSeesHowLoopsClosed (SPEC 39, loops outlive a run): on
// the real server, the campaign's check of the loops it carried reads a
// completed loop's result (also after the loop's own continue-as-new), a
// failed and a cancelled loop's error and whole usage, a terminated loop's
// close and an unknown id, and leaves a running loop out.
func TestRealStackCheckTaskLoopsSeesHowLoopsClosed(t *testing.T) {
	t.Parallel()
	c := dial(t)
	queue := "it-check-task-loops"
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(loopPlay, workflow.RegisterOptions{Name: "LoopPlay"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := map[string]string{}
	for _, how := range []string{"complete", "complete-after-move", "fail", "cancel", "terminate", "run"} {
		id := "check-loops/" + how
		ids[how] = id
		if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 10 * time.Minute}, "LoopPlay", how); err != nil {
			t.Fatal(err)
		}
	}
	for _, how := range []string{"complete", "complete-after-move", "fail"} {
		_ = c.GetWorkflow(ctx, ids[how], "").Get(ctx, nil)
	}
	// Cancel and terminate once they wait (their first task done).
	if err := wait.Until(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		d, err := c.DescribeWorkflowExecution(ctx, ids["cancel"], "")
		if err != nil || d.GetPendingWorkflowTask() != nil || d.GetWorkflowExecutionInfo().GetHistoryLength() < 3 {
			return fmt.Errorf("the cancel loop has not waited yet: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.CancelWorkflow(ctx, ids["cancel"], ""); err != nil {
		t.Fatal(err)
	}
	if err := c.TerminateWorkflow(ctx, ids["terminate"], "", "an operator ended it"); err != nil {
		t.Fatal(err)
	}
	var canceled *temporal.CanceledError
	if err := c.GetWorkflow(ctx, ids["cancel"], "").Get(ctx, nil); !errors.As(err, &canceled) {
		t.Fatalf("the cancel loop ended %v", err)
	}

	var env testsuite.WorkflowTestSuite
	aenv := env.NewTestActivityEnvironment()
	loops := activities.TaskLoops{Client: c}
	aenv.RegisterActivityWithOptions(loops.Check, activity.RegisterOptions{Name: activities.CheckTaskLoopsName})
	in := activities.CheckTaskLoopsInput{WorkflowIDs: []string{ids["complete"], ids["complete-after-move"], ids["fail"], ids["cancel"],
		ids["terminate"], ids["run"], "check-loops/never-started"}}
	v, err := aenv.ExecuteActivity(activities.CheckTaskLoopsName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out activities.CheckTaskLoopsOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	got := map[string]activities.TaskLoopEnd{}
	for _, e := range out.Ended {
		got[e.WorkflowID] = e
		t.Logf("%s: %s %q result %s usage %+v", e.WorkflowID, e.Status, e.Failure, e.Result, e.RunUsage)
	}
	spent := usage.Usage{ModelCalls: 2, PromptTokens: 300}
	for _, how := range []string{"complete", "complete-after-move"} {
		var res workflows.Result
		if e := got[ids[how]]; e.Status != "completed" || json.Unmarshal(e.Result, &res) != nil || res.Checkpoint == nil || res.Checkpoint.Commit != "abc123" || res.Usage != spent {
			t.Errorf("%s: %+v", how, e)
		}
	}
	if e := got[ids["fail"]]; e.Status != "failed" || e.RunUsage == nil || *e.RunUsage != spent || e.Failure != "round 2 failed: model said 401" {
		t.Errorf("fail: %+v", e)
	}
	if e := got[ids["cancel"]]; e.Status != "canceled" || e.Failure != "canceled" || e.RunUsage == nil || *e.RunUsage != spent {
		t.Errorf("cancel: %+v", e)
	}
	if e := got[ids["terminate"]]; e.Status != "terminated" {
		t.Errorf("terminate: %+v", e)
	}
	if e := got["check-loops/never-started"]; e.Status != "not-found" {
		t.Errorf("never started: %+v", e)
	}
	if _, ok := got[ids["run"]]; ok || len(out.Ended) != 6 {
		t.Errorf("%d loops seen closed, the running one among them: %v", len(out.Ended), ok)
	}
	_ = c.TerminateWorkflow(ctx, ids["run"], "", "the test ends")
}
