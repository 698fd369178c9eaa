package agent

import (
	"fmt"
	"strings"
	"time"
)

// The forced hand-off as the model reads it: the notice naming the bound
// (bounds.go decides which) and what is left of every bound.

type handoffData struct {
	Reason        string
	Remaining     string
	VerifyCommand string
}

// forceHandoff appends the notice for bound and offers only the finishing
// tool from now on; a session forces its hand-off once.
func (s *session) forceHandoff(step int, bound string) error {
	if s.bounds.forced != "" {
		return nil
	}
	notice, err := s.handoffNotice(bound, s.finishingRequestTokens())
	if err != nil {
		return err
	}
	s.bounds.force(bound)
	s.conv.appendUser(notice)
	s.emit(Event{Kind: EventHandoff, Step: step, Bound: bound})
	return nil
}

// handoffNotice is the notice for bound; contextTokens is the size of the
// request that offers only the finishing tool, as the agent's side knows it.
func (r *round) handoffNotice(bound string, contextTokens int) (string, error) {
	text, err := render(r.role.texts().handoff, handoffData{Reason: r.boundReason(bound), Remaining: r.remaining(contextTokens), VerifyCommand: r.req.VerifyCommand})
	if err != nil {
		return "", err
	}
	// No tool runs after the hand-off, so protected paths are restored now
	// and the report that follows is never refused for them.
	paths, err := r.restoreProtected()
	if err != nil {
		return "", err
	}
	return text + r.role.restoredNote(paths), nil
}

func (r *round) boundReason(bound string) string {
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

// remaining lists what is left of every bound that applies, the context
// holding contextTokens.
func (r *round) remaining(contextTokens int) string {
	now := time.Now()
	parts := []string{fmt.Sprintf("model calls: %d of %d", r.cfg.MaxModelCalls-r.calls, r.cfg.MaxModelCalls)}
	if !r.req.Deadline.IsZero() {
		parts = append(parts, "round time: "+humanDuration(r.req.Deadline.Sub(now)))
	}
	parts = append(parts, fmt.Sprintf("context: about %d of %d tokens used", contextTokens, r.cfg.ContextTokens))
	if r.req.TokenBudget > 0 {
		parts = append(parts, fmt.Sprintf("run token budget: %d tokens", max(r.budgetLeft(), 0)))
	}
	if !r.req.RunDeadline.IsZero() {
		parts = append(parts, "run time: "+humanDuration(r.req.RunDeadline.Sub(now)))
	}
	return strings.Join(parts, "; ")
}
