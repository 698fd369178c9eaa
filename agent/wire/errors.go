package wire

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// maxErrorTextChars bounds provider text (often a whole HTML page) quoted in
// an error.
const maxErrorTextChars = 500

// MinSecretLen is the shortest API key redacted from text; shorter strings
// would garble ordinary words and are no real key.
const MinSecretLen = 4

// RedactedMarker replaces the API key wherever it would appear.
const RedactedMarker = "[REDACTED]"

// RefusedError is the provider's ordinary refusal of a call (400, 401, 403,
// 404, 422, an exhausted quota when the call may not defer, a server
// misconfiguration): no retry or wait mends it.
type RefusedError struct {
	Step int
	// Text describes the refusal (API key redacted).
	Text string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("model call %d failed: %s", e.Step, e.Text)
}

// ContextLengthError is the provider's refusal of a request as too long for
// the model's context; the round answers the first one with a compacted
// request.
type ContextLengthError struct {
	Step int
	Text string
}

func (e *ContextLengthError) Error() string {
	return fmt.Sprintf("model call %d was refused as too long for the model's context: %s", e.Step, e.Text)
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

// Redact removes secret from s.
func Redact(s, secret string) string {
	if len(secret) < MinSecretLen {
		return s
	}
	return strings.ReplaceAll(s, secret, RedactedMarker)
}

// clip shortens provider text for an error message.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= maxErrorTextChars {
		return s
	}
	return runes.Prefix(s, maxErrorTextChars) + " […]"
}
