package agent

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// maxErrorTextChars bounds provider text (often a whole HTML page) quoted in
// an error.
const maxErrorTextChars = 500

// minSecretLen is the shortest API key redacted from text; shorter strings
// would garble ordinary words and are no real key.
const minSecretLen = 4

// redactedMarker replaces the API key wherever it would appear.
const redactedMarker = "[REDACTED]"

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

// ModelUnavailableError says transient model errors outlasted the in-session
// retries. A later attempt (a fresh session) may succeed, so it is retryable.
type ModelUnavailableError struct {
	Attempts int
	// Last describes the last transient error (API key redacted).
	Last string
}

func (e *ModelUnavailableError) Error() string {
	return fmt.Sprintf("model unavailable after %d attempts: %s", e.Attempts, e.Last)
}

// Reasons of a deferred round (docs/provider-limits.md#deferred-rounds).
const (
	DeferRateLimited = "rate-limited"
	DeferQuota       = "quota"
	DeferUnavailable = "unavailable"
)

// DeferredError ends a session early because the provider said "not now":
// the in-session retries are spent (on every fallback model), a 429 or 503
// asked for a wait longer than the session may sleep, or the key is out of
// quota. It is not a failure of the round: the workflow waits durably and
// runs the round again as a fresh session.
type DeferredError struct {
	Reason string
	// RetryAfter is the delay the provider gave; 0 when it gave none.
	RetryAfter time.Duration
	// Model is the model the session was using when it deferred.
	Model string
	// Last describes the last model error (API key redacted).
	Last string
}

func (e *DeferredError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("round deferred (%s, provider asked to wait %s): %s", e.Reason, e.RetryAfter, e.Last)
	}
	return fmt.Sprintf("round deferred (%s): %s", e.Reason, e.Last)
}

// RetryAfterSeconds is the provider's delay in whole seconds, rounded up.
func (e *DeferredError) RetryAfterSeconds() int {
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}

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
func Redact(s, secret string) string {
	if len(secret) < minSecretLen {
		return s
	}
	return strings.ReplaceAll(s, secret, redactedMarker)
}

// clip shortens provider text for an error message.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= maxErrorTextChars {
		return s
	}
	return runes.Prefix(s, maxErrorTextChars) + " […]"
}
