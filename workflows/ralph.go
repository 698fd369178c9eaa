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

// Round retry policy: infrastructure failures (a lost worker, a heartbeat
// timeout, a model that stayed unavailable) are retried with backoff up to
// roundRetryMaxInterval, so minutes of provider outage or a few rolling
// deploys during one round do not end a long run.
const (
	roundRetryInitialInterval = time.Second
	roundRetryMaxInterval     = 2 * time.Minute
)

// Ralph is the workflow registered under WorkflowName. A caller starts it
// with a raw JSON Input; the workflow's own continue-as-new passes nil input
// and a Continuation. The raw input lets the workflow itself name bad fields
// (unknown keys, a float maxRounds) instead of failing to decode them. A
// Campaign passes its task's loops a TaskStart as well.
func Ralph(ctx workflow.Context, input json.RawMessage, cont *Continuation, start *TaskStart) (*Result, error) {
	l := &loop{status: Status{Phase: PhaseStarting, Rounds: []RoundSummary{}}}
	if err := l.register(ctx); err != nil {
		return nil, err
	}
	var err error
	if cont != nil {
		err = l.resume(ctx, cont)
	} else {
		err = l.begin(ctx, input)
		if err == nil && start != nil {
			err = l.startTask(ctx, start)
		}
	}
	if err != nil {
		if ctx.Err() != nil || temporal.IsCanceledError(err) {
			// A cancel that lands while the limits are being resolved.
			return nil, l.cancelled(ctx, 0, err)
		}
		l.stop(ctx, OutcomeFailed, 0)
		return nil, err
	}
	return l.run(ctx, cont != nil)
}

// loop is the state of one workflow run.
type loop struct {
	limits        activities.Limits
	objective     string
	workspace     string
	verifyCommand string
	maxRounds     int
	nextRound     int
	budget        RunBudget
	idleRounds    int
	usage         usage.Usage
	last          *report.Report
	checkpoint    *activities.Checkpoint
	control       control
	roundRunning  bool
	status        Status
	// protected are the run's own protected-path patterns (the input's);
	// review runs the independent reviewer after an accepted complete;
	// baseCommit is where the run's change starts (git modes).
	protected  []string
	review     bool
	baseCommit string
	// firstRequestTokens is the prompt tokens of the last round's first
	// request (0: unknown), for the token budget's floor.
	firstRequestTokens int
	// roundsThisRun counts the rounds this workflow run started.
	roundsThisRun int
	// rewoundAwaited: this reset run waited for SignalRewound (awaitRewound).
	rewoundAwaited bool
	// usageAfter is the run's usage when each round of this workflow run
	// was recorded: where a rewind to that round resets it (takeRewind).
	usageAfter map[int]usage.Usage
	// deferrals counts the running round's consecutive deferrals and
	// deferredSpent is what they spent; a continue-as-new during the
	// round's wait carries both.
	deferrals     int
	deferredSpent usage.Usage
	// heldContinues: a pause or a round's wait ends in a continue-as-new
	// when the server suggests one (continueWhileHeld).
	heldContinues bool
	// approve is the run's approval mode (people.go); people its guidance
	// and approval waits.
	approve string
	people  people
	// candidates is how many fresh agents each round runs (candidates.go).
	candidates int
	// campaignObjective is a planned campaign's objective, the context of
	// the task's own in every round's prompt (empty: none).
	campaignObjective string
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
	l.limits = limits
	r, err := parseInput(input, limits, workflow.GetInfo(ctx).WorkflowExecution.ID)
	if err == nil {
		err = objectiveSize(ctx, r.objective)
	}
	if err == nil {
		err = budgetMinutesBound(ctx, r.maxMinutes)
	}
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidInput, nil)
	}
	l.objective, l.maxRounds, l.workspace, l.verifyCommand = r.objective, r.maxRounds, r.workspace, r.verifyCommand
	l.protected, l.review, l.approve, l.candidates = r.protected, r.review, r.approve, r.candidates
	l.budget = newRunBudget(r.maxTokens, r.maxMinutes, workflow.Now(ctx))
	l.nextRound = 1
	return nil
}

// startTask takes what a campaign hands its task's loop: the report a later
// go starts from. Only a parent workflow may pass one, and it is validated
// like any report, so the handoff stays the only state between rounds.
func (l *loop) startTask(ctx workflow.Context, start *TaskStart) error {
	if workflow.GetInfo(ctx).ParentWorkflowExecution == nil {
		return invalidInput("task start: the third argument is accepted only from a Campaign starting its task's loop")
	}
	if err := l.takeCampaignObjective(start.CampaignObjective); err != nil {
		return err
	}
	if start.PreviousReport == nil {
		return nil
	}
	if err := report.Validate(*start.PreviousReport, l.limits.MaxHandoffChars); err != nil {
		return invalidInput(fmt.Sprintf("task start carries an invalid report: %v", err))
	}
	r := *start.PreviousReport
	l.last = &r
	return nil
}

// resume restores what a continue-as-new carried. Only the workflow's own
// continue-as-new may pass a continuation (the server then sets the run it
// continued from): a caller could otherwise pick its own limits and an
// unvalidated report.
func (l *loop) resume(ctx workflow.Context, c *Continuation) error {
	if workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		return invalidInput("continuation: the second argument is accepted only from the workflow's own continue-as-new; start a run with the JSON input alone")
	}
	if err := checkLimits(c.Limits); err != nil {
		return err
	}
	if c.NextRound < 2 || c.NextRound > c.MaxRounds || c.MaxRounds > c.Limits.MaxRounds || c.Objective == "" || CheckWorkspace(c.Workspace) != nil {
		return invalidInput(fmt.Sprintf("continuation is inconsistent: next round %d of %d, workspace %q", c.NextRound, c.MaxRounds, c.Workspace))
	}
	// The carried report is not validated again: the run that carried it
	// accepted it under the rules of its build, and a later build's
	// stricter rules must not fail an open run at its continue-as-new.
	if c.LastReport == nil {
		return invalidInput("continuation carries no last report")
	}
	l.limits = c.Limits
	l.objective, l.maxRounds, l.workspace, l.verifyCommand = c.Objective, c.MaxRounds, c.Workspace, c.VerifyCommand
	l.nextRound = c.NextRound
	l.budget = c.Budget
	l.idleRounds = c.IdleRounds
	l.usage = c.Usage
	l.last = c.LastReport
	l.checkpoint = c.Checkpoint
	l.control.paused = c.Paused
	l.control.stopRequested, l.control.stopReason = c.StopRequested, c.StopReason
	l.protected, l.review, l.baseCommit = c.ProtectedPaths, c.Review, c.BaseCommit
	l.firstRequestTokens = c.FirstRequestTokens
	l.deferrals, l.deferredSpent = c.Deferrals, c.DeferredUsage
	l.approve, l.people.pending = c.Approve, c.Guidance
	l.candidates = c.Candidates
	l.campaignObjective = c.CampaignObjective
	l.status.Round = c.NextRound - 1
	// A continued run is past starting: it runs, or holds a carried pause.
	l.status.Phase = PhaseRunning
	if c.Paused {
		l.status.Phase = PhasePaused
	}
	return nil
}

func invalidInput(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeInvalidInput, nil)
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
			return invalidInput(fmt.Sprintf("deployment limits are invalid: %s must be positive, got %d", c.name, c.value))
		}
	}
	return nil
}

// snapshot is the status query's answer: the loop's own progress (round,
// phase, outcome, rounds) plus what derives from its state.
func (l *loop) snapshot() Status {
	st := l.status
	st.Rounds, st.RoundsOmitted = boundedRounds(l.status.Rounds)
	st.MaxRounds = l.maxRounds
	st.LastReport = l.last
	st.Usage = l.usage
	st.Objective = l.objective
	st.Workspace = l.workspace
	st.VerifyCommand = l.verifyCommand
	st.StopRequested = l.control.stopRequested
	st.PauseRequested = l.control.paused
	st.Budget = l.budget.status(l.limits.MaxIdleRounds)
	st.Guidance = l.people.status()
	return st
}

// run executes rounds until an outcome, a failure or a continue-as-new.
func (l *loop) run(ctx workflow.Context, continued bool) (*Result, error) {
	if !continued || workflow.GetVersion(ctx, versionNoStartingUpsert, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		l.upsertVisibility(ctx)
	}
	for round := l.nextRound; round <= l.maxRounds; round++ {
		if res, err := l.beforeRound(ctx, round); res != nil || err != nil {
			return res, err
		}
		if l.roundsThisRun >= l.limits.RoundsPerRun || (l.roundsThisRun > 0 && workflow.GetInfo(ctx).GetContinueAsNewSuggested()) ||
			l.upgradeDue(ctx, round) {
			return nil, l.continueAsNew(ctx, round)
		}
		l.roundsThisRun++
		out, res, err := l.playRound(ctx, round)
		if err != nil || res != nil {
			return res, err
		}
		l.record(ctx, round, out)
		if res, err := l.afterRound(ctx, round, out); res != nil || err != nil {
			return res, err
		}
	}
	return l.finishBudget(ctx, LimitRounds, l.maxRounds), nil
}

// beforeRound holds a paused run and ends the run before round when a stop
// is pending or a budget cannot pay for the round (a nil result: go on).
func (l *loop) beforeRound(ctx workflow.Context, round int) (*Result, error) {
	if err := l.awaitRewound(ctx, round); err != nil {
		return nil, l.cancelled(ctx, round-1, err)
	}
	l.takeRewind(ctx)
	if res, err := l.waitWhilePaused(ctx, round-1); res != nil || err != nil {
		if err != nil && !workflow.IsContinueAsNewError(err) {
			return nil, l.cancelled(ctx, round-1, err)
		}
		return res, err
	}
	if l.control.stopRequested {
		return l.finishStopped(ctx, round-1), nil
	}
	if limit := l.budget.exhausted(l.usage, workflow.Now(ctx)); limit != "" {
		return l.finishBudget(ctx, limit, round-1), nil
	}
	// The run's first round is exempt from the floor: the caller chose the budget.
	if round > 1 {
		if limit := l.budgetFloor(ctx, workflow.Now(ctx)); limit != "" {
			return l.finishBudget(ctx, limit, round-1), nil
		}
	}
	return nil, nil
}

// afterRound decides what a recorded round's report means for the run: a
// complete (after the reviewer's approval, when one applies) or a blocked
// ends it, then a pending stop, a budget that forced the round's hand-off,
// and the idle budget. A nil result and error: the next round.
func (l *loop) afterRound(ctx workflow.Context, round int, out activities.RoundOutput) (*Result, error) {
	switch l.last.Status {
	case report.StatusComplete:
		if !l.review {
			return l.complete(ctx, round, out, nil)
		}
		rv, res, err := l.runReview(ctx, round, out)
		if res != nil || err != nil {
			return res, err
		}
		if rv.Verdict == report.VerdictApprove {
			return l.complete(ctx, round, out, &rv)
		}
		// revise: the run goes on with the reviewer's findings as the
		// handoff; at the last round the round cap ends it below.
	case report.StatusBlocked:
		return l.finish(ctx, report.OutcomeBlocked, round), nil
	}
	return l.goOn(ctx, round, out, false)
}

// complete ends the run on an accepted complete, or first waits for an
// approval when the run's approval mode asks for one; a rejection goes on.
func (l *loop) complete(ctx workflow.Context, round int, out activities.RoundOutput, rv *report.Review) (*Result, error) {
	if l.approvalAfter(round, true) {
		rejected, res, err := l.awaitApproval(ctx, round)
		if res != nil || err != nil {
			return res, err
		}
		if rejected {
			return l.goOn(ctx, round, out, true)
		}
	}
	return l.finishComplete(ctx, round, out.Verification, rv), nil
}

// goOn ends the run after a round that did not, on a pending stop, a
// budget that forced the round's hand-off or the idle budget; under
// rounds:N it then waits for an approval (unless waited: it just did).
func (l *loop) goOn(ctx workflow.Context, round int, out activities.RoundOutput, waited bool) (*Result, error) {
	if l.control.stopRequested {
		return l.finishStopped(ctx, round), nil
	}
	if limit := l.forcedLimit(ctx, out); limit != "" {
		return l.finishBudget(ctx, limit, round), nil
	}
	// At the last round the round cap is what ended the run.
	if round < l.maxRounds && l.limits.MaxIdleRounds > 0 && l.idleRounds >= l.limits.MaxIdleRounds {
		return l.finishBudget(ctx, LimitIdle, round), nil
	}
	if !waited && round < l.maxRounds && l.approvalAfter(round, false) {
		_, res, err := l.awaitApproval(ctx, round)
		return res, err
	}
	return nil, nil
}

// forcedLimit names the run budget that forced out's hand-off: such a round
// is the run's last, so the run ends with the budget that constrained it
// instead of ever-shorter rounds that end idle. Runs recorded before this
// rule go on as they did.
func (l *loop) forcedLimit(ctx workflow.Context, out activities.RoundOutput) string {
	if out.BudgetForced == "" {
		return ""
	}
	if workflow.GetVersion(ctx, versionBudgetLastRound, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return ""
	}
	return out.BudgetForced
}

// budgetFloor names the budget whose remainder cannot pay for a useful
// round, so the run ends before the round starts instead of handing off at
// once round after round ("Zeno rounds"). Runs recorded before the floor
// keep the old path; runs recorded before the last-round rule keep the old
// floor of a minute.
func (l *loop) budgetFloor(ctx workflow.Context, now time.Time) string {
	if l.budget.MaxTokens == 0 && l.budget.MaxMinutes == 0 {
		return ""
	}
	if workflow.GetVersion(ctx, versionBudgetFloor, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return ""
	}
	minTime := oldMinRoundTime
	if workflow.GetVersion(ctx, versionBudgetLastRound, workflow.DefaultVersion, 1) >= 1 {
		minTime = minRoundTime
	}
	return l.budget.floor(l.usage, now, firstRequestEstimate(l.firstRequestTokens, l.objective), minTime)
}

// record keeps a finished round's outcome: usage, report, checkpoint and the
// idle counter.
func (l *loop) record(ctx workflow.Context, round int, out activities.RoundOutput) {
	l.usage = l.usage.Add(out.Usage)
	if l.usageAfter == nil {
		l.usageAfter = map[int]usage.Usage{}
	}
	l.usageAfter[round] = l.usage
	accepted := out.Report
	l.last = &accepted
	if out.Checkpoint != nil {
		l.checkpoint = out.Checkpoint
		if l.baseCommit == "" {
			l.baseCommit = out.Checkpoint.Parent
		}
	}
	if accepted.Status == report.StatusContinue && !out.WorkspaceChanged {
		l.idleRounds++
	} else {
		l.idleRounds = 0
	}
	if out.FirstRequestTokens > 0 {
		l.firstRequestTokens = out.FirstRequestTokens
	}
	summary := RoundSummary{Round: round, Status: accepted.Status, Summary: accepted.Summary, SessionID: out.SessionID,
		Verified: out.Verification.Passed(), Model: out.Model, Deferrals: l.status.Deferrals, Restored: out.Restored,
		Candidates: l.status.Candidates}
	l.status.Deferrals = 0
	l.status.Candidates = nil
	if out.Checkpoint != nil {
		summary.Commit = out.Checkpoint.Commit
	}
	l.status.Rounds = append(l.status.Rounds, summary)
	if out.Checkpoint != nil {
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("Round %d of %d ended %s at commit %s", round, l.maxRounds, accepted.Status, shortCommit(out.Checkpoint.Commit)))
	}
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// runRound runs one round as one activity (or, with candidates, one
// activity per candidate) and re-validates its report.
func (l *loop) runRound(ctx workflow.Context, round int) (activities.RoundOutput, error) {
	label := l.beginRound(ctx, round)
	defer func() { l.roundRunning = false }()
	in := l.roundInput(ctx, round)
	if l.candidates > 1 {
		return l.runCandidates(ctx, round, label, in)
	}
	actx := workflow.WithActivityOptions(ctx, l.roundOptions(label))
	var out activities.RoundOutput
	err := workflow.ExecuteActivity(actx, activities.RunRoundName, in).Get(ctx, &out)
	if err == nil && out.Deferred == nil {
		l.people.delivering = "" // the round ran with it: delivered once
	}
	if ctx.Err() != nil || temporal.IsCanceledError(err) {
		// A cancel wins over whatever the stopping round returned; what the
		// cancelled round spent still counts.
		l.usage = l.usage.Add(cancelledUsage(err))
		return out, l.cancelled(ctx, round, err)
	}
	if err != nil {
		spent := failedUsage(err)
		l.usage = l.usage.Add(spent)
		l.stop(ctx, OutcomeFailed, round)
		return out, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d failed: %v", round, err), ErrTypeRoundFailed, err,
			RoundFailedDetails{FailedRound: round, LastHandoff: l.last, Usage: spent, RunUsage: l.usage})
	}
	if out.Deferred != nil && l.limits.Deferrals() {
		return out, nil
	}
	if err := l.checkOutput(out); err != nil {
		return out, l.refuseOutput(ctx, round, out, err)
	}
	return out, nil
}

// beginRound marks round running (status, details, visibility) and
// returns its label.
func (l *loop) beginRound(ctx workflow.Context, round int) string {
	l.status.Round = round
	l.status.Phase = PhaseRunning
	l.roundRunning = true
	label := fmt.Sprintf("Round %d of %d", round, l.maxRounds)
	workflow.SetCurrentDetails(ctx, label)
	l.upsertVisibility(ctx)
	return label
}

// roundInput is what round's session (each candidate's) receives.
func (l *loop) roundInput(ctx workflow.Context, round int) activities.RoundInput {
	in := activities.RoundInput{
		Objective: l.objective, Round: round, MaxRounds: l.maxRounds, Workspace: l.workspace,
		Previous: l.last, MaxHandoffChars: l.limits.MaxHandoffChars, VerifyCommand: l.verifyCommand,
		TokenBudget: l.budget.tokensLeft(l.usage), RunDeadline: l.budget.Deadline,
		ProtectedPaths: l.protectedSets(),
		Deferrable:     l.limits.Deferrals(),
		Rewound:        resetRun(ctx),
		Guidance:       l.people.take(round),
	}
	in.CampaignObjective = l.campaignObjective
	if l.checkpoint != nil {
		in.Checkpoint = l.checkpoint.Commit
	}
	return in
}

// refuseOutput fails the run on round's output, whose report broke a rule
// (problem); what the round spent still counts.
func (l *loop) refuseOutput(ctx workflow.Context, round int, out activities.RoundOutput, problem error) error {
	l.usage = l.usage.Add(out.Usage)
	l.stop(ctx, OutcomeFailed, round)
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("round %d returned an invalid report: %v", round, problem), ErrTypeInvalidReport, nil,
		InvalidReportDetails{Round: round, Problem: problem.Error(), LastHandoff: l.last, RunUsage: l.usage})
}

// checkOutput validates a round's report again across the seam, and that a
// complete report carries a passing run of the verify command that applies.
func (l *loop) checkOutput(out activities.RoundOutput) error {
	if err := report.Validate(out.Report, l.limits.MaxHandoffChars); err != nil {
		return err
	}
	if out.Report.Status != report.StatusComplete || l.verifyCommand == "" {
		return nil
	}
	switch v := out.Verification; {
	case v == nil:
		return fmt.Errorf("status complete without a verification while the verify command %q applies", l.verifyCommand)
	case v.Command != l.verifyCommand:
		return fmt.Errorf("status complete verified by %q, not by the verify command %q", v.Command, l.verifyCommand)
	case !v.Passed():
		return fmt.Errorf("status complete although the verify command %q exited %d", l.verifyCommand, v.ExitCode)
	}
	return nil
}

// failedUsage is what a failed round's attempts spent: the failure's details
// when the last attempt returned an error, or its last heartbeat when it
// timed out or its worker died (heartbeats carry the attempts' usage so far).
func failedUsage(err error) usage.Usage {
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) && timeoutErr.HasLastHeartbeatDetails() {
		var hb activities.HeartbeatDetails
		if timeoutErr.LastHeartbeatDetails(&hb) == nil {
			return hb.Usage
		}
		return usage.Usage{}
	}
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.HasDetails() {
		return usage.Usage{}
	}
	var d activities.FailureDetails
	if appErr.Details(&d) != nil {
		return usage.Usage{}
	}
	return d.Usage
}

// cancelledUsage is what a cancelled round's attempts spent, as its
// CanceledError carries it (nothing from workers that predate that).
func cancelledUsage(err error) usage.Usage {
	var ce *temporal.CanceledError
	var d activities.FailureDetails
	if !errors.As(err, &ce) || !ce.HasDetails() || ce.Details(&d) != nil {
		return usage.Usage{}
	}
	return d.Usage
}

// cancelled closes the run as cancelled, whatever the stopping round
// reported; the cancel carries the run's whole usage (CancelledDetails), so
// a parent campaign charges what a cancelled loop spent.
func (l *loop) cancelled(ctx workflow.Context, round int, _ error) error {
	l.stop(ctx, OutcomeCancelled, round)
	return temporal.NewCanceledError(CancelledDetails{Round: round, RunUsage: l.usage})
}

// roundOptions: WaitForCancellation so a cancel closes the run only after the
// round stopped; retries only for infrastructure failures, never for a child
// that failed in an ordinary way.
func (l *loop) roundOptions(summary string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(l.limits.RoundTimeoutSeconds) * time.Second,
		HeartbeatTimeout:    time.Duration(l.limits.HeartbeatTimeoutSeconds) * time.Second,
		WaitForCancellation: true,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    roundRetryInitialInterval,
			BackoffCoefficient: 2,
			MaximumInterval:    roundRetryMaxInterval,
			MaximumAttempts:    int32(l.limits.RoundAttempts),
			NonRetryableErrorTypes: []string{
				activities.ErrTypeChildFailed, activities.ErrTypeBadRoundInput,
			},
		},
	}
}

func (l *loop) finish(ctx workflow.Context, outcome string, rounds int) *Result {
	l.takeRewind(ctx) // what a rewound run spent before its reset is in its result
	l.stop(ctx, outcome, rounds)
	return &Result{Status: outcome, RoundsStarted: rounds, Report: l.last, Usage: l.usage, Checkpoint: l.checkpoint}
}

func (l *loop) finishComplete(ctx workflow.Context, rounds int, v *report.Verification, rv *report.Review) *Result {
	res := l.finish(ctx, report.OutcomeComplete, rounds)
	if l.verifyCommand != "" {
		res.Verification = v
	}
	res.Review = rv
	return res
}

func (l *loop) finishBudget(ctx workflow.Context, limit string, rounds int) *Result {
	res := l.finish(ctx, report.OutcomeBudgetLimited, rounds)
	res.Limit = limit
	return res
}

func (l *loop) finishStopped(ctx workflow.Context, rounds int) *Result {
	res := l.finish(ctx, report.OutcomeStopped, rounds)
	reason := l.control.stopReason
	res.Reason = &reason
	return res
}

// stop marks the run finished for the status query, the UI and visibility,
// whatever the outcome.
func (l *loop) stop(ctx workflow.Context, outcome string, rounds int) {
	l.status.Phase = PhaseFinished
	l.status.Outcome = outcome
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Finished: %s after %d round(s)", outcome, rounds))
	l.upsertVisibility(ctx)
	l.notify(ctx, outcome, rounds, 0, true)
}

func (l *loop) continueAsNew(ctx workflow.Context, nextRound int) error {
	// On a versioned worker the next run starts on the deployment's current
	// version (and is pinned there from its first task): the round boundary
	// is where a run upgrades. Servers that predate upgrade-on-continue-as-new
	// ignore the option and keep the run pinned to its build.
	opts := workflow.ContinueAsNewErrorOptions{InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade}
	drained := workflow.GetVersion(ctx, versionDrainSignals, workflow.DefaultVersion, 1) >= 1
	if drained {
		drainSignals(ctx)
	}
	cont := &Continuation{
		Objective: l.objective, Workspace: l.workspace, MaxRounds: l.maxRounds, NextRound: nextRound,
		Limits: l.limits, Usage: l.usage, LastReport: l.last, VerifyCommand: l.verifyCommand,
		Budget: l.budget, IdleRounds: l.idleRounds, Checkpoint: l.checkpoint, Paused: l.control.paused,
		ProtectedPaths: l.protected, Review: l.review, BaseCommit: l.baseCommit,
		FirstRequestTokens: l.firstRequestTokens,
		Approve:            l.approve, Guidance: l.people.pending,
	}
	cont.CampaignObjective = l.campaignObjective
	if l.candidates > 1 { // one agent a round is what runs before candidates carried
		cont.Candidates = l.candidates
	}
	if drained {
		cont.StopRequested, cont.StopReason = l.control.stopRequested, l.control.stopReason
		cont.Guidance = l.people.carried()
	}
	// What only a pause or a wait leaves pending: a rewound signal (the
	// next run would never see it) and a deferred round's counters.
	pending := workflow.GetSignalChannel(ctx, SignalRewound).Len() > 0 || l.deferrals > 0
	if pending && workflow.GetVersion(ctx, versionCarryDeferrals, workflow.DefaultVersion, 1) >= 1 {
		l.takeRewind(ctx)
		cont.Usage = l.usage
		cont.Deferrals, cont.DeferredUsage = l.deferrals, l.deferredSpent
	}
	return workflow.NewContinueAsNewErrorWithOptions(ctx, opts, WorkflowName, nil, cont)
}

// drainSignals lets the signal receivers (stop, guide) take what arrived in
// this workflow task before the run continues as new. A signal is handed to
// its receiver's coroutine, which runs after this one: without the yield, a
// signal delivered with the event that ended a round was taken after the
// continuation was built, and lost. The coroutine started here runs after
// every receiver, so the wait ends once they all ran. No command.
func drainSignals(ctx workflow.Context) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	ran := false
	workflow.Go(dctx, func(workflow.Context) { ran = true })
	_ = workflow.Await(dctx, func() bool { return ran })
}
