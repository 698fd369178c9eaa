package workflows

import (
	"math"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"

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

// MaxBudgetMinutes is the largest time budget accepted: the most minutes a
// time.Duration holds (about 292 years). A larger one would overflow the
// deadline and end the run at once.
const MaxBudgetMinutes = int(math.MaxInt64 / int64(time.Minute))

// budgetMinutesBound refuses a time budget over MaxBudgetMinutes. The
// version marker is written only for such budgets: runs recorded before the
// bound accepted them (and ended at once).
func budgetMinutesBound(ctx workflow.Context, minutes int) error {
	if minutes <= MaxBudgetMinutes ||
		workflow.GetVersion(ctx, versionMinutesBound, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	return inputErr(fieldMaxMinutes, "must be between 1 and %d (the largest time budget accepted: a later deadline overflows), got %d",
		MaxBudgetMinutes, minutes)
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

// The budget floor: a round starts only when the budget's remainder can pay
// for a useful round. Time: at least max(minRoundTime, a tenth of the
// budget) left (oldMinRoundTime in runs recorded before the last-round
// rule: a floor of a minute left a short budget's remainder unused). Tokens: at least the fixed cost of a round's first request
// left, taken from the last round's first request when the provider
// reported it, else estimated as baseFirstRequestTokens (the round prompt
// and the tool definitions are about 12 KB) plus a token per four code
// points of the objective.
const (
	oldMinRoundTime        = 60 * time.Second
	baseFirstRequestTokens = 3000
)

// minRoundTime is a variable only so that the replay test can show a
// changed floor failing the replay (TestReplayDetectsChangedCommands).
var minRoundTime = 10 * time.Second

// firstRequestEstimate is the estimated cost of a round's first request.
func firstRequestEstimate(lastFirstRequest int, objective string) int {
	if lastFirstRequest > 0 {
		return lastFirstRequest
	}
	return baseFirstRequestTokens + utf8.RuneCountInString(objective)/4
}

// floor names the budget whose remainder cannot pay for a useful round
// ("" when both can, or when no such budget applies).
func (b RunBudget) floor(spent usage.Usage, now time.Time, firstRequestTokens int, minTime time.Duration) string {
	if b.MaxMinutes > 0 && !b.Deadline.IsZero() {
		need := max(minTime, time.Duration(b.MaxMinutes)*time.Minute/10)
		if b.Deadline.Sub(now) < need {
			return LimitTime
		}
	}
	if b.MaxTokens > 0 && b.MaxTokens-tokens(spent) < firstRequestTokens {
		return LimitTokens
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

// tokens is what the budget charges: reported and estimated (usage.Tokens).
func tokens(u usage.Usage) int { return u.Tokens() }

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
