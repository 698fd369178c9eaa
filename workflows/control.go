package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"
)

// MaxStopReasonChars bounds the reason of a stop update in code points.
const MaxStopReasonChars = 1024

// StopRequest is the stop update's argument.
type StopRequest struct {
	Reason string `json:"reason,omitempty"`
}

// control is what operators asked for through updates.
type control struct {
	stopRequested bool
	stopReason    string
	paused        bool // a pause was accepted and no resume since
}

// Update is one update a workflow handles: its handler and validator (nil:
// every call accepted). Exported for the campaign's updates.
type Update struct {
	Name      string
	Handler   any
	Validator any
}

// SetUpdates installs updates, each with its validator.
func SetUpdates(ctx workflow.Context, updates []Update) error {
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.Name, u.Handler,
			workflow.UpdateHandlerOptions{Validator: u.Validator}); err != nil {
			return fmt.Errorf("register the %s update: %w", u.Name, err)
		}
	}
	return nil
}

// register installs the status query and the operator updates. Updates (not
// signals) so that the caller learns at once whether it was accepted; each
// validator refuses, with the reason, an update that does not apply.
func (l *loop) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, StatusQueryName, func() (Status, error) {
		return l.snapshot(), nil
	}); err != nil {
		return fmt.Errorf("register the %s query: %w", StatusQueryName, err)
	}
	if err := SetUpdates(ctx, []Update{
		{UpdateStop, l.onStop, l.validateStop},
		{UpdatePause, l.onPause, l.validatePause},
		{UpdateResume, l.onResume, l.validateResume},
		{UpdateExtend, l.onExtend, l.validateExtend},
		{UpdateDescribe, l.onDescribe, nil},
		{UpdateGuide, l.onGuide, l.validateGuide},
		{UpdateApprove, l.onApprove, l.validateApprove},
		{UpdateReject, l.onReject, l.validateReject},
	}); err != nil {
		return err
	}
	// A campaign stops its task's loop with this signal (a workflow cannot
	// send an update); it means what the stop update means.
	stops := workflow.GetSignalChannel(ctx, SignalStop)
	workflow.Go(ctx, func(ctx workflow.Context) {
		var req StopRequest
		for stops.Receive(ctx, &req) {
			if l.validateStop(req) == nil {
				_, _ = l.onStop(ctx, req)
			}
		}
	})
	l.receiveGuidance(ctx)
	return nil
}

func (l *loop) validateStop(req StopRequest) error {
	switch {
	case l.status.Phase == PhaseFinished:
		return errors.New("the run has already finished")
	case l.control.stopRequested:
		return errors.New("a stop is already pending: the run ends after the running round")
	case utf8.RuneCountInString(req.Reason) > MaxStopReasonChars:
		return fmt.Errorf("reason is %d characters, over the limit of %d", utf8.RuneCountInString(req.Reason), MaxStopReasonChars)
	}
	return nil
}

func (l *loop) onStop(_ workflow.Context, req StopRequest) (Ack, error) {
	l.control.stopRequested = true
	l.control.stopReason = strings.TrimSpace(req.Reason)
	return l.ack(), nil
}

// ack is an update's answer: the few fields that show what it did. Every
// update result is written to history, so it never carries the rounds, the
// objective or a report (the status query has them).
func (l *loop) ack() Ack {
	return Ack{Phase: l.status.Phase, Round: l.status.Round,
		StopRequested: l.control.stopRequested, PauseRequested: l.control.paused}
}

func (l *loop) validatePause() error {
	switch {
	case l.status.Phase == PhaseFinished:
		return errors.New("the run has already finished")
	case l.control.paused && l.roundRunning:
		return errors.New("the run is already pausing: it pauses when the running round ends")
	case l.control.paused:
		return errors.New("the run is already paused")
	}
	return nil
}

func (l *loop) onPause(workflow.Context) (Ack, error) {
	l.control.paused = true
	// An approval wait keeps its phase; the pause holds the next round.
	if !l.roundRunning && l.status.Phase != PhaseStarting && l.status.Phase != PhaseAwaitingApproval {
		l.status.Phase = PhasePaused
	}
	return l.ack(), nil
}

func (l *loop) validateResume() error {
	switch {
	case l.status.Phase == PhaseFinished:
		return errors.New("the run has already finished")
	case !l.control.paused:
		return errors.New("the run is not paused")
	}
	return nil
}

func (l *loop) onResume(workflow.Context) (Ack, error) {
	l.control.paused = false
	if l.status.Phase == PhasePaused {
		l.status.Phase = PhaseRunning
	}
	return l.ack(), nil
}

// waitWhilePaused holds the loop between rounds while a pause applies: a
// durable wait that ends on resume, stop or cancel, or (see awaitResume)
// at the time budget's deadline or after RALPH_MAX_PAUSE_HOURS.
func (l *loop) waitWhilePaused(ctx workflow.Context, done int) (*Result, error) {
	if !l.control.paused {
		return nil, nil
	}
	l.status.Phase = PhasePaused
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Paused before round %d of %d", l.status.Round+1, l.maxRounds))
	l.upsertVisibility(ctx)
	res, err := l.awaitResume(ctx, done, true)
	if res == nil && err == nil && !l.control.stopRequested {
		l.status.Phase = PhaseRunning
	}
	return res, err
}

// awaitResume waits until a resume or a stop. A paused run still ends at
// its time budget's deadline (budget-limited, time) and after
// MaxPauseHours (stopped, with the reason saying so), so a forgotten pause
// never keeps a run, and the build it runs on, for ever. done is the
// rounds finished. Runs recorded before these ends wait as they did. With
// upgrade, a pinned run whose target version changed continues as new (still
// paused) before round done+1.
func (l *loop) awaitResume(ctx workflow.Context, done int, upgrade bool) (*Result, error) {
	resumed := func() bool {
		return !l.control.paused || l.control.stopRequested || (upgrade && l.moveDue(ctx, done+1))
	}
	if workflow.GetVersion(ctx, versionPauseEnds, workflow.DefaultVersion, 1) == workflow.DefaultVersion ||
		(l.limits.MaxPauseHours == 0 && l.budget.Deadline.IsZero()) {
		return nil, l.upgradeAfterWait(ctx, done+1, upgrade, workflow.Await(ctx, resumed))
	}
	if upgrade {
		l.continueWhileHeld(ctx)
	}
	pausedAt := workflow.Now(ctx)
	for {
		now := workflow.Now(ctx)
		if limit := l.budget.exhausted(l.usage, now); limit != "" {
			return l.finishBudget(ctx, limit, done), nil
		}
		end := l.budget.Deadline
		if l.limits.MaxPauseHours > 0 {
			maxEnd := pausedAt.Add(time.Duration(l.limits.MaxPauseHours) * time.Hour)
			if !now.Before(maxEnd) {
				l.control.stopRequested = true
				l.control.stopReason = fmt.Sprintf("paused for more than %d hours", l.limits.MaxPauseHours)
				return l.finishStopped(ctx, done), nil
			}
			if end.IsZero() || maxEnd.Before(end) {
				end = maxEnd
			}
		}
		ok, err := awaitWithTimeout(ctx, end.Sub(now), resumed)
		if err != nil || ok {
			return nil, l.upgradeAfterWait(ctx, done+1, upgrade, err)
		}
	}
}

// upgradeAfterWait is the continue-as-new of a wait that ended on a changed
// target version (err when the wait itself failed, nil otherwise).
func (l *loop) upgradeAfterWait(ctx workflow.Context, next int, upgrade bool, err error) error {
	if err == nil && upgrade && l.control.paused && !l.control.stopRequested && l.moveDue(ctx, next) {
		return l.continueAsNew(ctx, next)
	}
	return err
}

// continueWhileHeld lets a held run (a pause, a round's wait) continue as
// new when the server suggests it: every describe adds the status to the
// history of a run that may hold for days. Runs recorded before it keep
// holding (versionHeldContinues; a round's wait calls it too).
func (l *loop) continueWhileHeld(ctx workflow.Context) {
	l.heldContinues = workflow.GetVersion(ctx, versionHeldContinues, workflow.DefaultVersion, 1) >= 1
}

// moveDue: a held run continues as new before round next, on a changed
// target version (upgradeDue) or, where continueWhileHeld allowed it, when
// the server suggests it (never before round 2: a continuation starts there).
func (l *loop) moveDue(ctx workflow.Context, next int) bool {
	return l.upgradeDue(ctx, next) || (l.heldContinues && next >= 2 && workflow.GetInfo(ctx).GetContinueAsNewSuggested())
}

// upgradeDue: a pinned run (the recorded limits say so) whose target
// version changed moves to it with a continue-as-new before round next.
// Only after a round of this run, and never before round 2, so a server that
// ignores the upgrade on continue-as-new costs one continue-as-new per round,
// not a loop of them.
func (l *loop) upgradeDue(ctx workflow.Context, next int) bool {
	return l.limits.UpgradeOnTargetChange && l.roundsThisRun > 0 && next >= 2 &&
		workflow.GetInfo(ctx).GetTargetWorkerDeploymentVersionChanged()
}

// awaitWithTimeout is workflow.AwaitWithTimeout that cancels its timer when
// condition comes true (this SDK leaves it running unless a flag it does
// not turn on is set: a 100 h pause timer fired long after the resume) and
// starts none when condition already holds. Runs recorded before it keep
// the SDK's behaviour. ok is false when the timeout passed.
func awaitWithTimeout(ctx workflow.Context, timeout time.Duration, condition func() bool) (ok bool, err error) {
	if workflow.GetVersion(ctx, versionCancelTimers, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.AwaitWithTimeout(ctx, timeout, condition)
	}
	if condition() {
		return true, nil
	}
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, timeout)
	if err := workflow.Await(ctx, func() bool { return timer.IsReady() || condition() }); err != nil {
		return false, err
	}
	return !timer.IsReady(), nil
}
