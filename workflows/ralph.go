// Package workflows holds the Ralph loop: one immutable objective, one fresh
// agent session per round, one validated report carried between rounds.
// Everything here is deterministic workflow code.
package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// resolveLimitsTimeout bounds the local activity that reads the worker's limits.
const resolveLimitsTimeout = 10 * time.Second

// Ralph is the workflow registered under WorkflowName. A caller starts it
// with a raw JSON Input; a continue-as-new passes nil input and a
// Continuation. The raw input lets the workflow itself name bad fields
// (unknown keys, a float maxRounds) instead of failing to decode them.
func Ralph(ctx workflow.Context, input json.RawMessage, cont *Continuation) (*Result, error) {
	l := &loop{status: Status{Phase: PhaseStarting, Rounds: []RoundSummary{}}}
	if err := workflow.SetQueryHandler(ctx, StatusQueryName, func() (Status, error) {
		return l.status, nil
	}); err != nil {
		return nil, fmt.Errorf("register the %s query: %w", StatusQueryName, err)
	}

	if cont != nil {
		if err := l.resume(cont); err != nil {
			return nil, err
		}
	} else if err := l.begin(ctx, input); err != nil {
		return nil, err
	}
	return l.run(ctx)
}

// loop is the state of one workflow run.
type loop struct {
	limits    activities.Limits
	objective string
	workspace string
	maxRounds int
	nextRound int
	usage     usage.Usage
	last      *report.Report
	status    Status
}

// begin resolves the deployment limits (recorded in history) and validates a
// caller's input against them.
func (l *loop) begin(ctx workflow.Context, input json.RawMessage) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: resolveLimitsTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var limits activities.Limits
	if err := workflow.ExecuteLocalActivity(lctx, activities.ResolveLimitsName).Get(ctx, &limits); err != nil {
		return fmt.Errorf("resolve deployment limits: %w", err)
	}
	if err := checkLimits(limits); err != nil {
		return err
	}
	r, err := parseInput(input, limits, workflow.GetInfo(ctx).WorkflowExecution.ID)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidInput, nil)
	}
	l.limits = limits
	l.objective, l.maxRounds, l.workspace = r.objective, r.maxRounds, r.workspace
	l.nextRound = 1
	l.syncStatus()
	return nil
}

// resume restores what a continue-as-new carried.
func (l *loop) resume(c *Continuation) error {
	if err := checkLimits(c.Limits); err != nil {
		return err
	}
	if c.NextRound < 2 || c.NextRound > c.MaxRounds || c.Objective == "" || CheckWorkspace(c.Workspace) != nil {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("continuation is inconsistent: next round %d of %d, workspace %q", c.NextRound, c.MaxRounds, c.Workspace),
			ErrTypeInvalidInput, nil)
	}
	l.limits = c.Limits
	l.objective, l.maxRounds, l.workspace = c.Objective, c.MaxRounds, c.Workspace
	l.nextRound = c.NextRound
	l.usage = c.Usage
	l.last = c.LastReport
	l.status.Round = c.NextRound - 1
	l.syncStatus()
	return nil
}

func checkLimits(limits activities.Limits) error {
	checks := []struct {
		name  string
		value int
	}{
		{"maxRounds", limits.MaxRounds}, {"maxHandoffChars", limits.MaxHandoffChars},
		{"maxObjectiveChars", limits.MaxObjectiveChars}, {"roundTimeoutSeconds", limits.RoundTimeoutSeconds},
		{"heartbeatTimeoutSeconds", limits.HeartbeatTimeoutSeconds}, {"roundAttempts", limits.RoundAttempts},
		{"roundsPerRun", limits.RoundsPerRun},
	}
	for _, c := range checks {
		if c.value <= 0 {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("deployment limits are invalid: %s must be positive, got %d", c.name, c.value),
				ErrTypeInvalidInput, nil)
		}
	}
	return nil
}

func (l *loop) syncStatus() {
	l.status.MaxRounds = l.maxRounds
	l.status.LastReport = l.last
	l.status.Usage = l.usage
	l.status.Objective = l.objective
	l.status.Workspace = l.workspace
}

// run executes rounds until an outcome, a failure or a continue-as-new.
func (l *loop) run(ctx workflow.Context) (*Result, error) {
	roundsThisRun := 0
	for round := l.nextRound; round <= l.maxRounds; round++ {
		if roundsThisRun >= l.limits.RoundsPerRun || (roundsThisRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) {
			return nil, l.continueAsNew(ctx, round)
		}
		roundsThisRun++
		out, err := l.runRound(ctx, round)
		if err != nil {
			return nil, err
		}
		l.usage = l.usage.Add(out.Usage)
		l.status.Rounds = append(l.status.Rounds, RoundSummary{
			Round: round, Status: out.Report.Status, Summary: out.Report.Summary, SessionID: out.SessionID,
		})
		accepted := out.Report
		l.last = &accepted
		l.syncStatus()

		switch accepted.Status {
		case report.StatusComplete:
			return l.finish(ctx, report.OutcomeComplete, round), nil
		case report.StatusBlocked:
			return l.finish(ctx, report.OutcomeBlocked, round), nil
		}
	}
	return l.finish(ctx, report.OutcomeBudgetLimited, l.maxRounds), nil
}

// runRound runs one round as one activity and re-validates its report.
func (l *loop) runRound(ctx workflow.Context, round int) (activities.RoundOutput, error) {
	l.status.Round = round
	l.status.Phase = PhaseRunning
	label := fmt.Sprintf("Round %d of %d", round, l.maxRounds)
	workflow.SetCurrentDetails(ctx, label)

	actx := workflow.WithActivityOptions(ctx, l.roundOptions(label))
	in := activities.RoundInput{
		Objective: l.objective, Round: round, MaxRounds: l.maxRounds, Workspace: l.workspace,
		Previous: l.last, MaxHandoffChars: l.limits.MaxHandoffChars,
	}
	var out activities.RoundOutput
	if err := workflow.ExecuteActivity(actx, activities.RunRoundName, in).Get(ctx, &out); err != nil {
		if temporal.IsCanceledError(err) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
			l.stop(ctx, OutcomeCancelled, round)
			return out, err
		}
		l.stop(ctx, OutcomeFailed, round)
		return out, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d failed: %v", round, err), ErrTypeRoundFailed, err,
			RoundFailedDetails{FailedRound: round, LastHandoff: l.last})
	}
	if err := report.Validate(out.Report, l.limits.MaxHandoffChars); err != nil {
		l.stop(ctx, OutcomeFailed, round)
		return out, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d returned an invalid report: %v", round, err), ErrTypeInvalidReport, nil,
			InvalidReportDetails{Round: round, Problem: err.Error(), LastHandoff: l.last})
	}
	return out, nil
}

// roundOptions: WaitForCancellation so a cancel closes the run only after the
// round stopped; retries only for infrastructure failures (a lost worker, a
// heartbeat timeout, a model that stayed unavailable), never for a child that
// failed in an ordinary way.
func (l *loop) roundOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(l.limits.RoundTimeoutSeconds) * time.Second,
		HeartbeatTimeout:    time.Duration(l.limits.HeartbeatTimeoutSeconds) * time.Second,
		WaitForCancellation: true,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    int32(l.limits.RoundAttempts),
			NonRetryableErrorTypes: []string{
				activities.ErrTypeChildFailed, activities.ErrTypeBadRoundInput,
			},
		},
	}
}

func (l *loop) finish(ctx workflow.Context, outcome string, rounds int) *Result {
	l.stop(ctx, outcome, rounds)
	return &Result{Status: outcome, RoundsStarted: rounds, Report: l.last, Usage: l.usage}
}

// stop marks the run finished for the status query and the UI, whatever the outcome.
func (l *loop) stop(ctx workflow.Context, outcome string, rounds int) {
	l.status.Phase = PhaseFinished
	l.status.Outcome = outcome
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Finished: %s after %d round(s)", outcome, rounds))
}

func (l *loop) continueAsNew(ctx workflow.Context, nextRound int) error {
	return workflow.NewContinueAsNewError(ctx, WorkflowName, nil, &Continuation{
		Objective: l.objective, Workspace: l.workspace, MaxRounds: l.maxRounds, NextRound: nextRound,
		Limits: l.limits, Usage: l.usage, LastReport: l.last,
	})
}
