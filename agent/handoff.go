package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Bounds that force a hand-off: the session appends a notice naming the
// bound and the remaining amounts and offers only submit_report from then
// on, because the next fresh worker is the loop's recovery. Only a session
// that still gives no valid report after that is a child failure.
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

// errHandoffTime ends tool calls still running when the time bound passes,
// so the hand-off call gets the time kept for it.
var errHandoffTime = errors.New("the time for work in this round is spent")

type handoffData struct {
	Reason        string
	Remaining     string
	VerifyCommand string
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
func (s *session) timeBound() (time.Time, string) {
	var at time.Time
	var bound string
	if !s.req.Deadline.IsZero() {
		at, bound = handoffPoint(s.started, s.req.Deadline), BoundRoundTime
	}
	if !s.req.RunDeadline.IsZero() {
		if run := handoffPoint(s.started, s.req.RunDeadline); at.IsZero() || run.Before(at) {
			at, bound = run, BoundRunTime
		}
	}
	return at, bound
}

// dueBound names the bound the next call (number step) reaches, if any.
func (s *session) dueBound(step int) string {
	switch {
	case s.pendingBound != "":
		return s.pendingBound
	case step >= s.cfg.MaxModelCalls:
		return BoundModelCalls
	case !s.handoffAt.IsZero() && !time.Now().Before(s.handoffAt):
		return s.handoffBound
	}
	next := s.nextRequestTokens(s.allDefs)
	if next*100 > s.cfg.ContextTokens*ContextHandoffPercent {
		return BoundContext
	}
	if s.req.TokenBudget > 0 && next+s.answerReserve() > s.budgetLeft() {
		return BoundTokenBudget
	}
	return ""
}

// budgetLeft is what this session may still spend of the run's token budget.
func (s *session) budgetLeft() int {
	return s.req.TokenBudget - s.usage.PromptTokens - s.usage.CompletionTokens
}

// answerReserve is the room kept for the model's answer: the output limit
// when one is set, else the size of the largest valid report.
func (s *session) answerReserve() int {
	if s.cfg.MaxOutputTokens > 0 {
		return s.cfg.MaxOutputTokens
	}
	return (s.req.handoffCap() + charsPerToken - 1) / charsPerToken
}

// forceHandoff appends the notice for bound and offers only submit_report
// from now on; a session forces its hand-off once.
func (s *session) forceHandoff(step int, bound string) error {
	if s.forced != "" {
		return nil
	}
	notice, err := s.handoffNotice(bound)
	if err != nil {
		return err
	}
	s.forced, s.reportOnly, s.pendingBound = bound, true, ""
	s.appendUser(notice)
	s.emit(Event{Kind: EventHandoff, Step: step, Bound: bound})
	return nil
}

func (s *session) handoffNotice(bound string) (string, error) {
	name := textHandoff
	if s.req.Review != nil {
		name = textReviewHandoff
	}
	text, err := render(name, handoffData{Reason: s.boundReason(bound), Remaining: s.remaining(), VerifyCommand: s.req.VerifyCommand})
	if err != nil {
		return "", err
	}
	// No tool runs after the hand-off, so protected paths are restored now
	// and the report that follows is never refused for them.
	paths, err := s.restoreProtected()
	if err != nil {
		return "", err
	}
	if len(paths) > 0 && s.req.Review == nil {
		text += fmt.Sprintf("\nProtected paths this round changed were restored to their state at the start of the round (they may be read but not changed): %s. Report where the work stands without those changes.",
			strings.Join(paths, ", "))
	}
	return text, nil
}

func (s *session) boundReason(bound string) string {
	switch bound {
	case BoundModelCalls:
		return "this is the last model call of this round."
	case BoundRoundTime:
		return "the time of this round is nearly spent; what is left is kept for your report."
	case BoundRunTime:
		return "the run's time budget is nearly spent; what is left is kept for your report."
	case BoundContext:
		return "your context is nearly full."
	case BoundContextError:
		return "the model provider refused the last request as too long for the model's context."
	case BoundLoop:
		return fmt.Sprintf("you called the same tool with identical arguments %d times in a row; another try will not give a different result.", RepeatHandoffAfter)
	case BoundTokenBudget:
		return "the next request would pass what is left of the run's token budget."
	}
	return "a bound of this round was reached."
}

// remaining lists what is left of every bound that applies.
func (s *session) remaining() string {
	now := time.Now()
	parts := []string{fmt.Sprintf("model calls: %d of %d", s.cfg.MaxModelCalls-s.calls, s.cfg.MaxModelCalls)}
	if !s.req.Deadline.IsZero() {
		parts = append(parts, "round time: "+humanDuration(s.req.Deadline.Sub(now)))
	}
	parts = append(parts, fmt.Sprintf("context: about %d of %d tokens used", s.nextRequestTokens([]openai.Tool{s.reportDef}), s.cfg.ContextTokens))
	if s.req.TokenBudget > 0 {
		parts = append(parts, fmt.Sprintf("run token budget: %d tokens", max(s.budgetLeft(), 0)))
	}
	if !s.req.RunDeadline.IsZero() {
		parts = append(parts, "run time: "+humanDuration(s.req.RunDeadline.Sub(now)))
	}
	return strings.Join(parts, "; ")
}
