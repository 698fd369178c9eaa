package agent

import (
	"errors"
	"fmt"

	"github.com/ralph-temporal/ralph/agent/wire"
)

// ChildFailure is an ordinary end of a round without a valid report: the
// provider refused the request (400, 401, 403, 404, 422, a second
// context-length refusal), or the session still gave no valid report after
// its forced hand-off (repairs or reminders spent, the last model call used,
// the round deadline passed). Retrying the round cannot help, so it is not
// retried.
type ChildFailure struct {
	Reason string
}

func (e *ChildFailure) Error() string {
	return "round ended without a valid report: " + e.Reason
}

func childFailure(format string, args ...any) error {
	return &ChildFailure{Reason: fmt.Sprintf(format, args...)}
}

// The model wire's error kinds, under the names the activities know them by
// (agent/wire documents them).
type (
	ModelUnavailableError = wire.ModelUnavailableError
	DeferredError         = wire.DeferredError
)

// Reasons of a deferred round (docs/provider-limits.md#deferred-rounds).
const (
	DeferRateLimited = wire.DeferRateLimited
	DeferQuota       = wire.DeferQuota
	DeferUnavailable = wire.DeferUnavailable
)

func isDeferred(err error) bool {
	_, ok := AsDeferred(err)
	return ok
}

// AsDeferred returns the deferral err carries, if any.
func AsDeferred(err error) (*DeferredError, bool) {
	var d *DeferredError
	ok := errors.As(err, &d)
	return d, ok
}

// IsChildFailure reports whether err ends the round in the ordinary way.
func IsChildFailure(err error) bool {
	var cf *ChildFailure
	return errors.As(err, &cf)
}

// IsModelUnavailable reports whether err is transient model trouble that
// outlasted the retries.
func IsModelUnavailable(err error) bool {
	var mu *ModelUnavailableError
	return errors.As(err, &mu)
}

// Redact removes secret from s.
func Redact(s, secret string) string { return wire.Redact(s, secret) }
