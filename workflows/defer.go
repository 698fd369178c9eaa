package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/usage"
)

// Version markers of command-changing edits (workflow.GetVersion): histories
// recorded before them replay on the old path.
const (
	// versionDeferrals: a deferred round waits on a durable timer and runs
	// again. Histories from before it never hold a deferred round.
	versionDeferrals = "deferred-rounds"
	// versionBudgetFloor: a budget whose remainder cannot pay for a useful
	// round ends the run before the round starts ("Zeno rounds" fix).
	versionBudgetFloor = "budget-floor"
	// versionNoStartingUpsert: a continued run no longer upserts
	// RalphPhase=starting before its first round (the search attributes
	// carried over from the previous run already show it running).
	versionNoStartingUpsert = "no-starting-upsert-in-continued-runs"
	// versionBudgetLastRound: a round whose hand-off a run budget forced is
	// the run's last, and the time floor is max(10 s, a tenth of the budget).
	versionBudgetLastRound = "budget-forced-round-is-last"
	// versionObjectiveBytes: an objective over MaxObjectiveBytes as JSON is
	// refused (the marker is written only for such objectives).
	versionObjectiveBytes = "objective-bytes-bound"
	// versionReviewDeferrals: a deferred review waits on a durable timer
	// and runs again (histories from before it never hold one).
	versionReviewDeferrals = "deferred-reviews"
	// versionPauseEnds: a pause ends at the time budget's deadline and
	// after RALPH_MAX_PAUSE_HOURS.
	versionPauseEnds = "pause-ends-at-deadline"
	// versionRewoundWait: a reset run waits up to rewoundWait for
	// SignalRewound before its first round check after the reset. Its change
	// id carries the round (rewoundWaitChange): see awaitRewound.
	versionRewoundWait = "wait-for-rewound-signal"
	// versionRewoundAdded: a rewound signal's abandoned spend is added to
	// the run's usage, not merged with it field by field (takeRewind). The
	// marker is written only when such a signal is taken.
	versionRewoundAdded = "rewound-spend-added"
	// versionMinutesBound: a maxMinutes over MaxBudgetMinutes is refused
	// (the marker is written only for such inputs).
	versionMinutesBound = "max-minutes-bound"
	// versionCancelTimers: a wait's timer is cancelled when the wait ends
	// before it fires, and none starts for a wait already over
	// (awaitWithTimeout).
	versionCancelTimers = "cancel-wait-timers"
	// versionCarryDeferrals: a continue-as-new during a deferred round's
	// wait carries the round's deferral count and what those sessions spent
	// (the marker is written only then), and takes a pending rewound signal
	// first.
	versionCarryDeferrals = "carry-deferrals-and-rewound"
	// versionHeldContinues: a paused run, or a round waiting out a
	// provider limit, continues as new when the server suggests it.
	versionHeldContinues = "held-run-continues-as-new"
	// versionDrainSignals: a run lets its signal receivers take what
	// arrived before it continues as new, and carries a pending stop
	// (drainSignals).
	versionDrainSignals = "drain-signals-before-continue-as-new"
	// versionNotifyNotCancelled: the detached RalphNotify child is never
	// cancelled by its parent (notifyDetached), so an end event keeps its
	// hour of retries after the run closed or was cancelled.
	versionNotifyNotCancelled = "notify-child-not-cancelled"
)

// Deferral waits: the provider's delay when it gave one, else
// firstDeferralWait doubling per consecutive deferral; never more than the
// deployment's RALPH_MAX_WAIT_MINUTES (a quota waits exactly that).
const firstDeferralWait = 30 * time.Second

// deferralWait is how long to wait after the n-th consecutive deferral (1-based).
func deferralWait(d activities.Deferred, n, maxWaitMinutes int) time.Duration {
	ceiling := time.Duration(maxWaitMinutes) * time.Minute
	if d.Reason == activities.DeferQuota {
		return ceiling
	}
	if d.RetryAfterSeconds > 0 {
		return min(time.Duration(d.RetryAfterSeconds)*time.Second, ceiling)
	}
	wait := firstDeferralWait
	for i := 1; i < n && wait < ceiling; i++ {
		wait *= 2
	}
	return min(wait, ceiling)
}

// playRound runs round until it hands off: a deferred session is followed
// by a durable wait and a new fresh session of the same round number. It
// returns the round's output, or a finished result when the run ended during
// a wait (stop, time budget), or the run's error (failure, cancel).
func (l *loop) playRound(ctx workflow.Context, round int) (activities.RoundOutput, *Result, error) {
	// The counter and its usage start from what a continue-as-new during
	// this round's wait carried, else from zero.
	l.status.Deferrals = l.deferrals
	for {
		out, err := l.runRound(ctx, round)
		if err != nil || out.Deferred == nil {
			// l.status.Deferrals stays until record() puts it in the round's summary.
			l.deferrals, l.deferredSpent = 0, usage.Usage{}
			return out, nil, err
		}
		if workflow.GetVersion(ctx, versionDeferrals, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			// A history from before deferrals never holds a deferred round:
			// the code of then took every output as the round's hand-off,
			// checked like any other (a deferred session's empty report fails
			// the run as invalid), and so does its replay.
			if err := l.checkOutput(out); err != nil {
				return out, nil, l.refuseOutput(ctx, round, out, err)
			}
			return out, nil, nil
		}
		// A deferral is not a round attempt and not a round: only its usage
		// counts (in the run's usage and so in the token budget).
		l.usage = l.usage.Add(out.Usage)
		l.deferredSpent = l.deferredSpent.Add(out.Usage)
		if out.FirstRequestTokens > 0 {
			l.firstRequestTokens = out.FirstRequestTokens
		}
		l.deferrals++
		deferrals := l.deferrals
		l.status.Deferrals = deferrals
		d := *out.Deferred
		workflow.GetLogger(ctx).Info("Round deferred", "round", round, "reason", d.Reason,
			"retryAfterSeconds", d.RetryAfterSeconds, "deferrals", deferrals)
		if deferrals >= l.limits.MaxDeferrals {
			l.stop(ctx, OutcomeFailed, round)
			return out, nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("round %d failed: deferred %d times in a row (last: %s), the limit of RALPH_MAX_DEFERRALS", round, deferrals, d.Reason),
				ErrTypeRoundFailed, nil, RoundFailedDetails{FailedRound: round, LastHandoff: l.last, Usage: l.deferredSpent, RunUsage: l.usage})
		}
		w := deferredWork{round: round, done: round - 1, what: fmt.Sprintf("round %d of %d", round, l.maxRounds)}
		if res, err := l.waitDeferred(ctx, w, d, deferralWait(d, deferrals, l.limits.MaxWaitMinutes)); res != nil || err != nil {
			return out, res, err
		}
	}
}

// waitDeferred waits d on a durable timer before round runs again. While
// waiting the status says phase waiting (until when and why), as do the
// RalphPhase search attribute and the UI's current details. A stop ends the
// run at once, a pause holds it (the wait goes on, or the round runs, on
// resume), a cancel ends it, and a time budget that runs out during the wait
// ends it budget-limited. A nil result and error mean: run the round now.
// deferredWork is what waits: round's session (done = round-1 rounds
// finished) or the review of round's completion (done = round).
type deferredWork struct {
	round, done int
	what        string // "round R of N" or "the review of round R of N"
}

func (l *loop) waitDeferred(ctx workflow.Context, w deferredWork, d activities.Deferred, wait time.Duration) (*Result, error) {
	until := workflow.Now(ctx).Add(wait)
	l.status.WaitingUntil = until.UTC().Format(time.RFC3339)
	l.status.WaitReason = d.Reason
	defer func() { l.status.WaitingUntil, l.status.WaitReason = "", "" }()
	shown := ""
	// A round's wait (not a review's) may end in an upgrade: the round runs
	// again on the new build.
	upgrade := w.done < w.round
	if upgrade {
		l.continueWhileHeld(ctx)
	}
	for {
		if l.control.stopRequested {
			return l.finishStopped(ctx, w.done), nil
		}
		now := workflow.Now(ctx)
		if limit := l.budget.exhausted(l.usage, now); limit != "" {
			return l.finishBudget(ctx, limit, w.done), nil
		}
		if upgrade && l.moveDue(ctx, w.round) {
			return nil, l.continueAsNew(ctx, w.round)
		}
		if l.control.paused {
			if shown != PhasePaused {
				shown = PhasePaused
				l.status.Phase = PhasePaused
				workflow.SetCurrentDetails(ctx, fmt.Sprintf("Paused while %s waits for the provider (%s) until %s",
					w.what, d.Reason, l.status.WaitingUntil))
				l.upsertVisibility(ctx)
			}
			if res, err := l.awaitResume(ctx, w.done, upgrade); res != nil || err != nil {
				if err != nil && !workflow.IsContinueAsNewError(err) {
					return nil, l.cancelled(ctx, w.done, err)
				}
				return res, err
			}
			continue
		}
		if !now.Before(until) {
			// The round starts again only if the budget can still pay for it.
			if limit := l.budgetFloor(ctx, now); limit != "" {
				return l.finishBudget(ctx, limit, w.done), nil
			}
			return nil, nil
		}
		if shown != PhaseWaiting {
			shown = PhaseWaiting
			l.status.Phase = PhaseWaiting
			workflow.SetCurrentDetails(ctx, fmt.Sprintf("Waiting until %s before running %s again: the provider is %s",
				l.status.WaitingUntil, w.what, d.Reason))
			l.upsertVisibility(ctx)
			l.notify(ctx, EventWaiting, w.round, l.status.Deferrals, false)
		}
		end := until
		if !l.budget.Deadline.IsZero() && l.budget.Deadline.Before(end) {
			end = l.budget.Deadline
		}
		if _, err := awaitWithTimeout(ctx, end.Sub(now), func() bool {
			return l.control.stopRequested || l.control.paused || (upgrade && l.moveDue(ctx, w.round))
		}); err != nil {
			return nil, l.cancelled(ctx, w.done, err)
		}
	}
}
