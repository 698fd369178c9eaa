package workflows

import (
	"time"

	"github.com/ralph-temporal/ralph/usage"
)

// RunBudget is a run's token and time budget, resolved once at the start and
// carried across continue-as-new, so a continued run keeps the original
// deadline. Zero fields mean no such budget.
type RunBudget struct {
	MaxTokens  int       `json:"maxTokens,omitempty"`
	MaxMinutes int       `json:"maxMinutes,omitempty"`
	Deadline   time.Time `json:"deadline,omitzero"`
}

func newRunBudget(maxTokens, maxMinutes int, start time.Time) RunBudget {
	b := RunBudget{MaxTokens: maxTokens, MaxMinutes: maxMinutes}
	if maxMinutes > 0 {
		b.Deadline = start.Add(time.Duration(maxMinutes) * time.Minute)
	}
	return b
}

// exhausted names the budget that allows no further round ("" when none).
// now is workflow time, so the check replays deterministically.
func (b RunBudget) exhausted(spent usage.Usage, now time.Time) string {
	switch {
	case b.MaxTokens > 0 && tokens(spent) >= b.MaxTokens:
		return LimitTokens
	case !b.Deadline.IsZero() && !now.Before(b.Deadline):
		return LimitTime
	}
	return ""
}

// tokensLeft is what the next round may spend (0: no token budget).
func (b RunBudget) tokensLeft(spent usage.Usage) int {
	if b.MaxTokens == 0 {
		return 0
	}
	return max(b.MaxTokens-tokens(spent), 1)
}

func tokens(u usage.Usage) int { return u.PromptTokens + u.CompletionTokens }

func (b RunBudget) status(maxIdleRounds int) BudgetStatus {
	var s BudgetStatus
	if b.MaxTokens > 0 {
		s.MaxTokens = &b.MaxTokens
	}
	if b.MaxMinutes > 0 {
		s.MaxMinutes = &b.MaxMinutes
	}
	if maxIdleRounds > 0 {
		s.IdleRounds = &maxIdleRounds
	}
	return s
}
