package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
)

// protectedSets are the pattern sets every round guards: the deployment's
// and the run's, each evaluated on its own so the run's negations cannot
// re-allow what the deployment protects.
func (l *loop) protectedSets() [][]string {
	var sets [][]string
	for _, set := range [][]string{l.limits.ProtectedPaths, l.protected} {
		if len(set) > 0 {
			sets = append(sets, set)
		}
	}
	return sets
}

// runReview runs ReviewCompletion on round's accepted completion until the
// reviewer gives a verdict: a review the provider deferred waits durably,
// as a round does, and runs again. It returns the verdict, or a finished
// result when the run ended during a wait (stop, time budget), or the run's
// error. It issues commands only when the reviewer is on, which no run
// recorded before it was, so those histories replay unchanged.
func (l *loop) runReview(ctx workflow.Context, round int, out activities.RoundOutput) (report.Review, *Result, error) {
	deferrals := 0
	for {
		rv, err := l.reviewOnce(ctx, round, out)
		if err != nil {
			return report.Review{}, nil, err
		}
		// A deferred review in a run recorded before review deferrals is
		// taken as it was then: a review without a verdict, refused.
		if rv.Deferred == nil || !l.limits.Deferrals() ||
			workflow.GetVersion(ctx, versionReviewDeferrals, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			review, err := l.acceptReview(ctx, round, out, rv)
			return review, nil, err
		}
		l.usage = l.usage.Add(rv.Usage)
		deferrals++
		d := *rv.Deferred
		workflow.GetLogger(ctx).Info("Review deferred", "round", round, "reason", d.Reason,
			"retryAfterSeconds", d.RetryAfterSeconds, "deferrals", deferrals)
		if deferrals >= l.limits.MaxDeferrals {
			l.stop(ctx, OutcomeFailed, round)
			return report.Review{}, nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("round %d: the independent review of its completion was deferred %d times in a row (last: %s), the limit of RALPH_MAX_DEFERRALS", round, deferrals, d.Reason),
				ErrTypeRoundFailed, nil, RoundFailedDetails{FailedRound: round, LastHandoff: l.last, Usage: rv.Usage, RunUsage: l.usage})
		}
		w := deferredWork{round: round, done: round, what: fmt.Sprintf("the review of round %d of %d", round, l.maxRounds)}
		if res, err := l.waitDeferred(ctx, w, d, deferralWait(d, deferrals, l.limits.MaxWaitMinutes)); res != nil || err != nil {
			return report.Review{}, res, err
		}
	}
}

// reviewOnce runs one reviewer session as one activity.
func (l *loop) reviewOnce(ctx workflow.Context, round int, out activities.RoundOutput) (activities.ReviewOutput, error) {
	l.status.Phase = PhaseRunning
	l.roundRunning = true
	defer func() { l.roundRunning = false }()
	label := fmt.Sprintf("Review of round %d of %d", round, l.maxRounds)
	workflow.SetCurrentDetails(ctx, label)
	in := activities.ReviewInput{
		Objective: l.objective, Round: round, MaxRounds: l.maxRounds, Workspace: l.workspace,
		Report: out.Report, Verification: out.Verification, BaseCommit: l.baseCommit,
		MaxHandoffChars: l.limits.MaxHandoffChars, TokenBudget: l.budget.tokensLeft(l.usage), RunDeadline: l.budget.Deadline,
		Deferrable: l.limits.Deferrals(),
	}
	if out.Checkpoint != nil {
		in.Commit = out.Checkpoint.Commit
	}
	var rv activities.ReviewOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, l.roundOptions(label)), activities.ReviewCompletionName, in).Get(ctx, &rv)
	if ctx.Err() != nil {
		return rv, l.cancelled(ctx, round, err)
	}
	if err != nil {
		if temporal.IsCanceledError(err) {
			return rv, l.cancelled(ctx, round, err)
		}
		spent := failedUsage(err)
		l.usage = l.usage.Add(spent)
		l.stop(ctx, OutcomeFailed, round)
		return rv, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d: the independent review of its completion failed: %v", round, err), ErrTypeRoundFailed, err,
			RoundFailedDetails{FailedRound: round, LastHandoff: l.last, Usage: spent, RunUsage: l.usage})
	}
	return rv, nil
}

// acceptReview keeps a review's outcome: usage, the status entry's verdict
// and, for revise, the continue handoff built from the completion and the
// findings.
func (l *loop) acceptReview(ctx workflow.Context, round int, out activities.RoundOutput, rv activities.ReviewOutput) (report.Review, error) {
	l.usage = l.usage.Add(rv.Usage)
	handoff, err := l.checkReview(rv.Review, out.Report)
	if err != nil {
		l.stop(ctx, OutcomeFailed, round)
		return report.Review{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d: the reviewer returned an invalid review: %v", round, err), ErrTypeInvalidReport, nil,
			InvalidReportDetails{Round: round, Problem: err.Error(), LastHandoff: l.last, RunUsage: l.usage})
	}
	l.status.Rounds[len(l.status.Rounds)-1].Review = rv.Review.Verdict
	if handoff != nil {
		l.last = handoff
	}
	return rv.Review, nil
}

// checkReview validates a review across the seam and, for revise, returns
// the continue handoff it becomes (validated like every report).
func (l *loop) checkReview(rv report.Review, completion report.Report) (*report.Report, error) {
	if err := report.ValidateReview(rv, l.limits.MaxHandoffChars); err != nil {
		return nil, err
	}
	if rv.Verdict != report.VerdictRevise {
		return nil, nil
	}
	h := report.RevisionHandoff(completion, rv)
	if err := report.Validate(h, l.limits.MaxHandoffChars); err != nil {
		return nil, err
	}
	return &h, nil
}
