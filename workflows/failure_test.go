package workflows

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// roundUsage is what one scripted round spends.
var roundUsage = usage.Usage{ModelCalls: 2, ToolCalls: 3, PromptTokens: 100, CompletionTokens: 10}

// chargeChild runs a Ralph loop as a child, as a campaign does, and returns
// the usage RunUsageOf reads out of the child's error.
func chargeChild(ctx workflow.Context, input json.RawMessage) (usage.Usage, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "camp/task"})
	err := workflow.ExecuteChildWorkflow(cctx, WorkflowName, input, (*Continuation)(nil), (*TaskStart)(nil)).Get(ctx, nil)
	if err == nil {
		return usage.Usage{}, fmt.Errorf("the child succeeded")
	}
	u, ok := RunUsageOf(err)
	if !ok {
		return usage.Usage{}, fmt.Errorf("no run usage in the child's error %v", err)
	}
	return u, nil
}

// A loop failing after two rounds exposes those rounds' usage, and the
// failed round's, in its failure details: a parent reads it from the child
// workflow's error.
func TestFailedRunCarriesItsWholeUsage(t *testing.T) {
	failed := usage.Usage{ModelCalls: 1, PromptTokens: 7}
	s := &script{failAt: map[int]error{3: temporal.NewNonRetryableApplicationError("model said 401",
		activities.ErrTypeChildFailed, nil, activities.FailureDetails{SessionID: "s3", Usage: failed})}}
	want := roundUsage.Add(roundUsage).Add(failed)

	env := newEnv(t, testLimits(), s)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	var d RoundFailedDetails
	if err := applicationError(t, err, ErrTypeRoundFailed).Details(&d); err != nil {
		t.Fatal(err)
	}
	if d.RunUsage != want || d.Usage != failed || d.FailedRound != 3 {
		t.Fatalf("details = %+v, want runUsage %+v (two rounds and the failed one)", d, want)
	}
	if u, ok := RunUsageOf(err); !ok || u != want {
		t.Fatalf("RunUsageOf(the run's error) = %+v, %v; want %+v", u, ok, want)
	}

	penv := newEnv(t, testLimits(), &script{failAt: s.failAt})
	penv.RegisterWorkflow(chargeChild)
	penv.ExecuteWorkflow(chargeChild, json.RawMessage(`{"objective":"fix it"}`))
	var got usage.Usage
	if err := penv.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if err := penv.GetWorkflowResult(&got); err != nil || got != want {
		t.Fatalf("parent charged %+v (%v), want %+v", got, err, want)
	}
}

// An invalid report after two rounds: the refused round's usage counts too.
func TestInvalidReportCarriesTheRunsUsage(t *testing.T) {
	bad := continueReport(3)
	bad.Summary = ""
	s := &script{reports: map[int]report.Report{3: bad}}
	_, err := execute(t, newEnv(t, testLimits(), s), `{"objective":"fix it"}`)
	applicationError(t, err, ErrTypeInvalidReport)
	want := roundUsage.Add(roundUsage).Add(roundUsage)
	if u, ok := RunUsageOf(err); !ok || u != want {
		t.Fatalf("RunUsageOf = %+v, %v; want %+v", u, ok, want)
	}
}

// A cancel during round 3 carries rounds 1 and 2 (the test environment's
// cancelled activity reports no spend of its own; cancel_test.go covers a
// round that does); an input error carries nothing.
func TestCancelledRunCarriesItsWholeUsage(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 25*time.Second)
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(`{"objective":"fix it"}`), (*Continuation)(nil))
	err := env.GetWorkflowError()
	if !temporal.IsCanceledError(err) {
		t.Fatalf("error = %v, want cancelled", err)
	}
	want := roundUsage.Add(roundUsage)
	if u, ok := RunUsageOf(err); !ok || u != want {
		t.Fatalf("RunUsageOf(cancel) = %+v, %v; want %+v", u, ok, want)
	}

	_, err = execute(t, newEnv(t, testLimits(), &script{}), `{"objective":""}`)
	if u, ok := RunUsageOf(err); ok {
		t.Fatalf("RunUsageOf(input error) = %+v, want none", u)
	}
}

// cancelChild runs a Ralph loop as a child and cancels it after `after`,
// as a cancelled campaign does, returning what RunUsageOf reads.
func cancelChild(ctx workflow.Context, input json.RawMessage, after time.Duration) (usage.Usage, error) {
	cctx, cancel := workflow.WithCancel(ctx)
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{WorkflowID: "camp/task",
		WaitForCancellation: true})
	f := workflow.ExecuteChildWorkflow(cctx, WorkflowName, input, (*Continuation)(nil), (*TaskStart)(nil))
	if err := workflow.Sleep(ctx, after); err != nil {
		return usage.Usage{}, err
	}
	cancel()
	err := f.Get(ctx, nil)
	u, ok := RunUsageOf(err)
	if !ok {
		return usage.Usage{}, fmt.Errorf("no run usage in the cancelled child's error %v", err)
	}
	return u, nil
}

// A parent that cancels its loop during round 3 reads rounds 1 and 2's
// usage from the child's cancellation.
func TestCancelledChildCarriesItsWholeUsage(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	env.RegisterWorkflow(cancelChild)
	env.ExecuteWorkflow(cancelChild, json.RawMessage(`{"objective":"fix it"}`), 25*time.Second)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var got usage.Usage
	if err := env.GetWorkflowResult(&got); err != nil || got != roundUsage.Add(roundUsage) {
		t.Fatalf("parent read %+v (%v), want two rounds' %+v", got, err, roundUsage.Add(roundUsage))
	}
}
