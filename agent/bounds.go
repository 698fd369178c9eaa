package agent

import (
	"context"
	"errors"
	"time"
)

// What can end a round, all in this file but two: a session ends
//   - with a valid report (or verdict) through its role's finishing tool,
//     the only success (role.go, review.go), or when its repairs are spent
//     on invalid ones (rejected, dispatch.go);
//   - when ctx ends: ctx.Err(), a cancel whatever it interrupted (settle);
//   - at Request.Deadline: an ordinary child failure (settle);
//   - when the model calls are spent without a valid report (exhausted);
//   - when the model answers with text past Config.MaxReminders (textAnswer);
//   - when the provider refuses a request as too long after the one
//     compaction (tooLong), or the compacted request would not fit (fits);
//   - when the model call fails for good (agent/wire: a refusal, the model
//     unavailable, a deferral).
//
// Before the budgets run out, a bound forces the hand-off: the session
// appends a notice naming it and offers only the finishing tool from then
// on, because the next fresh worker is the loop's recovery. Only a session
// that still gives no valid report after that is a child failure.

// Bounds that force a hand-off (the Bound of an EventHandoff).
const (
	BoundModelCalls   = "model-calls"   // the next call is the last one allowed
	BoundRoundTime    = "round-time"    // most of the round's time is spent
	BoundRunTime      = "run-time"      // most of the run's remaining time budget is spent
	BoundContext      = "context"       // the next request would pass ContextHandoffPercent of the context
	BoundContextError = "context-error" // the provider refused a request as too long
	BoundLoop         = "loop"          // the same tool call repeated RepeatHandoffAfter times
	BoundTokenBudget  = "run-tokens"    // the next request would pass the run's remaining token budget
)

// Thresholds of the forced hand-offs.
const (
	// ContextHandoffPercent of Config.ContextTokens: a next request above it
	// forces the hand-off. No request above 100 % is ever sent.
	ContextHandoffPercent = 80
	// TimeHandoffPercent of the time from session start to the round
	// deadline (and to the run's deadline) is spent: the hand-off is forced.
	TimeHandoffPercent = 90
	// MinHandoffReserve is the least time kept for the hand-off call after
	// the time bound (at most half the span): a real model needs seconds to
	// answer, and 10 % of a short round is not enough.
	MinHandoffReserve = 15 * time.Second
)

// errRoundDeadline is the cause of a session that reached Request.Deadline.
var errRoundDeadline = errors.New("round timeout reached")

// errHandoffTime ends tool calls still running when the time bound passes,
// so the hand-off call gets the time kept for it.
var errHandoffTime = errors.New("the time for work in this round is spent")

// roundBounds is where a round stands against its bounds: the limits, fixed
// when the session starts, and the state they drive. The state only moves
// one way: a bound found while tools run is pending, a forced hand-off
// offers only the finishing tool for good, and the conversation is
// compacted at most once (compacting forces the hand-off too).
type roundBounds struct {
	maxCalls      int       // Config.MaxModelCalls
	maxReminders  int       // Config.MaxReminders
	contextTokens int       // Config.ContextTokens
	tokenBudget   int       // Request.TokenBudget (0: none)
	answerReserve int       // room kept within the token budget for the answer
	handoffAt     time.Time // when the time bound is reached (zero: none)
	handoffBound  string    // which time bound handoffAt is
	deadline      time.Time // Request.Deadline (zero: none)

	forced     string // the bound that forced the hand-off ("": not forced)
	pending    string // a bound found while running tools, forced before the next call
	reportOnly bool   // only the finishing tool is offered from now on
	textStreak int    // consecutive answers without a tool call
	compacted  bool
}

func newRoundBounds(cfg Config, req Request, started time.Time) roundBounds {
	b := roundBounds{
		maxCalls: cfg.MaxModelCalls, maxReminders: cfg.MaxReminders, contextTokens: cfg.ContextTokens,
		tokenBudget: req.TokenBudget, answerReserve: answerReserve(cfg, req), deadline: req.Deadline,
	}
	b.handoffAt, b.handoffBound = timeBound(started, req.Deadline, req.RunDeadline)
	return b
}

// answerReserve is the room kept for the model's answer: the output limit
// when one is set, else the size of the largest valid report.
func answerReserve(cfg Config, req Request) int {
	if cfg.MaxOutputTokens > 0 {
		return cfg.MaxOutputTokens
	}
	return (req.handoffCap() + charsPerToken - 1) / charsPerToken
}

// handoffPoint is when a span from start to end counts as spent: at
// TimeHandoffPercent, or earlier so that MinHandoffReserve (at most half the
// span) is left.
func handoffPoint(start, end time.Time) time.Time {
	span := end.Sub(start)
	if span <= 0 {
		return end
	}
	reserve := max(span*(100-TimeHandoffPercent)/100, min(MinHandoffReserve, span/2))
	return end.Add(-reserve)
}

// timeBound is the earlier of the round's and the run's hand-off points.
func timeBound(started, roundDeadline, runDeadline time.Time) (time.Time, string) {
	var at time.Time
	var bound string
	if !roundDeadline.IsZero() {
		at, bound = handoffPoint(started, roundDeadline), BoundRoundTime
	}
	if !runDeadline.IsZero() {
		if run := handoffPoint(started, runDeadline); at.IsZero() || run.Before(at) {
			at, bound = run, BoundRunTime
		}
	}
	return at, bound
}

// callsLeft reports whether another model call is allowed after calls.
func (b *roundBounds) callsLeft(calls int) bool { return calls < b.maxCalls }

// handoffDue names the bound that forces the hand-off before call number
// step at now, "" when none does or the hand-off is forced already. spent is
// what the session spent of the run's token budget; next estimates the next
// request with every tool offered (asked only when the cheaper bounds hold).
func (b *roundBounds) handoffDue(step int, now time.Time, spent int, next func() int) string {
	switch {
	case b.forced != "":
		return ""
	case b.pending != "":
		return b.pending
	case step >= b.maxCalls:
		return BoundModelCalls
	case !b.handoffAt.IsZero() && !now.Before(b.handoffAt):
		return b.handoffBound
	}
	size := next()
	if size*100 > b.contextTokens*ContextHandoffPercent {
		return BoundContext
	}
	if b.tokenBudget > 0 && size+b.answerReserve > b.budgetLeft(spent) {
		return BoundTokenBudget
	}
	return ""
}

// budgetLeft is what the session may still spend of the run's token budget.
func (b *roundBounds) budgetLeft(spent int) int { return b.tokenBudget - spent }

// force offers only the finishing tool from now on, because of bound.
func (b *roundBounds) force(bound string) {
	b.forced, b.reportOnly, b.pending = bound, true, ""
}

// pend keeps a bound found while tools run, to force it before the next
// call (nothing when the hand-off is forced already).
func (b *roundBounds) pend(bound string) {
	if b.forced == "" {
		b.pending = bound
	}
}

// needsCompaction reports whether a next request of size tokens has to be
// compacted: it would not fit the context, or a hand-off forced by the
// token budget would pass it. Compaction happens once.
func (b *roundBounds) needsCompaction(size, spent int) bool {
	overBudget := b.forced == BoundTokenBudget && size > b.budgetLeft(spent)
	return !b.compacted && (size > b.contextTokens || overBudget)
}

// compact records the compaction; it forces the hand-off for bound unless
// another bound did already.
func (b *roundBounds) compact(bound string) {
	b.compacted, b.reportOnly = true, true
	if b.forced == "" {
		b.forced = bound
	}
}

// fits ends the round when a request of size tokens, even after
// compaction, is larger than the context: no such request is ever sent.
func (b *roundBounds) fits(size int) error {
	if size > b.contextTokens {
		return childFailure("the compacted hand-off request would need about %d tokens, more than the model's context of %d", size, b.contextTokens)
	}
	return nil
}

// tooLong answers the provider's refusal of a request as too long: the
// first one is answered with the compacted hand-off request (announce: no
// hand-off was forced yet, so the session records one), a second one ends
// the round.
func (b *roundBounds) tooLong(refusal error) (announce bool, err error) {
	if b.compacted {
		return false, childFailure("%v (again, after the compacted hand-off request)", refusal)
	}
	return b.forced == "", nil
}

// textAnswer counts an answer without tool calls. Only consecutive ones
// count: within Config.MaxReminders each gets a reminder, the last of them
// (final) offering only the finishing tool; past them the round ends.
func (b *roundBounds) textAnswer() (final bool, err error) {
	b.textStreak++
	if b.textStreak > b.maxReminders {
		return false, childFailure("the model answered with text %d times in a row, the last time when only submit_report was offered", b.textStreak)
	}
	if b.textStreak == b.maxReminders {
		b.reportOnly = true
		return true, nil
	}
	return false, nil
}

// toolsCalled ends a streak of text answers.
func (b *roundBounds) toolsCalled() { b.textStreak = 0 }

// exhausted is the end of a round whose model calls are spent without a
// valid report; lastRejection is why the last one was refused ("": none).
func (b *roundBounds) exhausted(lastRejection string) error {
	if lastRejection != "" {
		return childFailure("no valid report within the bound of %d model calls (last rejection: %s)", b.maxCalls, lastRejection)
	}
	return childFailure("no valid report within the bound of %d model calls", b.maxCalls)
}

// toolContext bounds tool calls by the time bound: a command still running
// when it passes is stopped (errHandoffTime), so the hand-off keeps its time.
func (b *roundBounds) toolContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.handoffAt.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, b.handoffAt, errHandoffTime)
}

// verifyTimeout is timeout shortened so that a check started before the
// time bound ends by it (a timed-out check is a refusal, and the hand-off
// still gets its time), and one started after it leaves half the round's
// rest for the report that follows a refusal.
func (b *roundBounds) verifyTimeout(timeout time.Duration, now time.Time) time.Duration {
	if !b.handoffAt.IsZero() && now.Before(b.handoffAt) {
		return min(timeout, b.handoffAt.Sub(now))
	}
	if !b.deadline.IsZero() {
		return max(min(timeout, b.deadline.Sub(now)/2), time.Millisecond)
	}
	return timeout
}

// settle gives a failed session its final error kind: the caller's ctx
// first (a cancel is a cancel, whatever it interrupted), then the round
// deadline (sctx's cause), which is an ordinary child failure.
func settle(ctx, sctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if sctx.Err() != nil && errors.Is(context.Cause(sctx), errRoundDeadline) {
		return childFailure("the round timeout was reached without a valid report")
	}
	return err
}
