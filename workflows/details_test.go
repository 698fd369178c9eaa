package workflows

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// A round whose last attempt timed out (a lost heartbeat, a dead worker)
// fails the run with what that attempt's last heartbeat said it had spent.
func TestRoundFailedAfterHeartbeatTimeoutKeepsHeartbeatUsage(t *testing.T) {
	limits := testLimits()
	limits.RoundAttempts = 1
	spent := usage.Usage{ModelCalls: 7, ToolCalls: 4, PromptTokens: 900, CompletionTokens: 90}
	s := &script{failAt: map[int]error{2: temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil,
		activities.HeartbeatDetails{Round: 2, Attempt: 1, Usage: spent})}}
	env := newEnv(t, limits, s)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	appErr := applicationError(t, err, ErrTypeRoundFailed)
	var d RoundFailedDetails
	if err := appErr.Details(&d); err != nil {
		t.Fatal(err)
	}
	if d.FailedRound != 2 || d.Usage != spent {
		t.Fatalf("RoundFailed details = %+v, want round 2 with the heartbeat's usage %+v", d, spent)
	}
	// The run's usage counts round 1 and the failed round's heartbeat.
	round1 := usage.Usage{ModelCalls: 2, ToolCalls: 3, PromptTokens: 100, CompletionTokens: 10}
	if st := queryStatus(t, env); st.Usage != round1.Add(spent) || st.Outcome != OutcomeFailed {
		t.Fatalf("status = %+v, want usage %+v", st, round1.Add(spent))
	}
}

// A retryable error of any type (the activity's catch-all RoundError) keeps
// the usage its details carry when the attempts run out.
func TestRoundFailedAfterRoundErrorKeepsUsage(t *testing.T) {
	limits := testLimits()
	limits.RoundAttempts = 1
	spent := usage.Usage{ModelCalls: 3, PromptTokens: 50}
	s := &script{failAt: map[int]error{1: temporal.NewApplicationError("disk full", activities.ErrTypeRoundError,
		activities.FailureDetails{SessionID: "s", Usage: spent})}}
	_, err := execute(t, newEnv(t, limits, s), `{"objective":"fix it"}`)
	var d RoundFailedDetails
	if err := applicationError(t, err, ErrTypeRoundFailed).Details(&d); err != nil || d.Usage != spent {
		t.Fatalf("RoundFailed details = %+v (%v), want usage %+v", d, err, spent)
	}
}

// A cancel that lands while the limits are being resolved closes the run
// cancelled, and the status query says so.
func TestCancelWhileResolvingLimits(t *testing.T) {
	var suite workflowSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Ralph, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(ctx context.Context) (activities.Limits, error) {
		env.CancelWorkflow()
		<-ctx.Done()
		return activities.Limits{}, ctx.Err()
	}, activity.RegisterOptions{Name: activities.ResolveLimitsName})
	s := &script{}
	env.RegisterActivityWithOptions(s.runRound, activity.RegisterOptions{Name: activities.RunRoundName})
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(`{"objective":"fix it"}`), (*Continuation)(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error = %v, want canceled", err)
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeCancelled {
		t.Fatalf("status = phase %q outcome %q, want finished/cancelled", st.Phase, st.Outcome)
	}
	if len(s.inputs) != 0 {
		t.Fatalf("%d rounds ran after the cancel", len(s.inputs))
	}
}

// A continued run never shows phase starting: not in the status query and
// not in the RalphPhase search attribute.
func TestContinuedRunNeverShowsStarting(t *testing.T) {
	limits := testLimits()
	last := continueReport(2)
	cont := Continuation{Objective: "fix it", Workspace: "w", MaxRounds: 6, NextRound: 3, Limits: limits, LastReport: &last}
	s := &script{reports: map[int]report.Report{3: completeReport(3)}}
	env := newEnv(t, limits, s)
	var phases []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		if p, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttrPhase)); ok {
			phases = append(phases, p)
		}
	}).Return(nil)
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).After(time.Hour).Return(s.runRound)
	var first Status
	env.RegisterDelayedCallback(func() { first = queryStatus(t, env) }, time.Millisecond)
	env.SetContinuedExecutionRunID("run-1")
	env.ExecuteWorkflow(WorkflowName, nil, &cont)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if first.Phase != PhaseRunning || first.Round != 3 {
		t.Errorf("status of the continued run before its first round: phase %q", first.Phase)
	}
	if len(phases) == 0 || phases[0] != PhaseRunning {
		t.Fatalf("RalphPhase upserts of the continued run = %v, want running first, never starting", phases)
	}
	for _, p := range phases {
		if p == PhaseStarting {
			t.Fatalf("RalphPhase upserts of the continued run = %v", phases)
		}
	}
}
