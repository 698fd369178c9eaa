package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/usage"
)

// The pieces of a run's input rules, budget and notification that the
// Campaign workflow (package workflows/campaign) applies as a run does,
// exported under one name each so both workflows read input alike.

// Input field names a campaign's task loops are started with.
const (
	FieldObjective      = fieldObjective
	FieldMaxRounds      = fieldMaxRounds
	FieldWorkspace      = fieldWorkspace
	FieldVerifyCommand  = fieldVerifyCommand
	FieldMaxTokens      = fieldMaxTokens
	FieldMaxMinutes     = fieldMaxMinutes
	FieldProtectedPaths = fieldProtected
)

// ResolveLimitsTimeout bounds the local activity that reads the limits.
const ResolveLimitsTimeout = resolveLimitsTimeout

// InputErr is an *InputError naming field.
func InputErr(field, format string, args ...any) error { return inputErr(field, format, args...) }

// InvalidInput is the non-retryable InvalidInput failure of msg.
func InvalidInput(msg string) error { return invalidInput(msg) }

// CheckLimits refuses resolved limits a run could not work within.
func CheckLimits(limits activities.Limits) error { return checkLimits(limits) }

// IsNull says a field is absent or JSON null.
func IsNull(raw json.RawMessage) bool { return isNull(raw) }

// FirstUnknown is the first key of fields not in allowed ("" if none).
func FirstUnknown(fields map[string]json.RawMessage, allowed []string) string {
	return firstUnknown(fields, allowed)
}

// ParseObjective reads an objective as a run's input does.
func ParseObjective(raw json.RawMessage, maxChars int) (string, error) {
	return parseObjective(raw, maxChars)
}

// ParseCount reads a positive count up to ceiling (def when absent).
func ParseCount(field string, raw json.RawMessage, ceiling, def int, ceilingName string) (int, error) {
	return parseCount(field, raw, ceiling, def, ceilingName)
}

// ParseBudget reads maxTokens or maxMinutes up to the deployment's ceiling.
func ParseBudget(field string, raw json.RawMessage, ceiling int, ceilingSetting string) (int, error) {
	return parseBudget(field, raw, ceiling, ceilingSetting)
}

// ParseVerifyCommand reads a verify command (deploymentDefault when absent).
func ParseVerifyCommand(raw json.RawMessage, deploymentDefault string) (string, error) {
	return parseVerifyCommand(raw, deploymentDefault)
}

// ParseProtected reads protected-path patterns as a run's input does.
func ParseProtected(raw json.RawMessage) ([]string, error) { return parseProtected(raw) }

// NewRunBudget is a budget of maxTokens and maxMinutes from start (0: none).
func NewRunBudget(maxTokens, maxMinutes int, start time.Time) RunBudget {
	return newRunBudget(maxTokens, maxMinutes, start)
}

// Exhausted names the limit spent reached ("" while within it).
func (b RunBudget) Exhausted(spent usage.Usage, now time.Time) string { return b.exhausted(spent, now) }

// TokensLeft is what remains of the token budget (0: none set or spent).
func (b RunBudget) TokensLeft(spent usage.Usage) int { return b.tokensLeft(spent) }

// Status is the budget as status shows it.
func (b RunBudget) Status() BudgetStatus { return b.status(0) }

// FailedUsage is the usage a failed run's error carries, if any.
func FailedUsage(err error) usage.Usage { return failedUsage(err) }

// ShortCommit is a commit id as a person reads it.
func ShortCommit(c string) string { return shortCommit(c) }

// NotifyDetached sends a notification from a detached child, never waiting.
func NotifyDetached(ctx workflow.Context, in activities.NotifyInput) { notifyDetached(ctx, in) }
