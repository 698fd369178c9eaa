package wire

import (
	"net/http"
	"time"
)

// APIs a client can speak (RALPH_WIRE_API).
const (
	APIChat      = "chat"
	APIResponses = "responses"
)

// Output-limit field names (RALPH_MAX_TOKENS_FIELD); empty picks by model.
const (
	MaxTokensField           = "max_tokens"
	MaxCompletionTokensField = "max_completion_tokens"
)

// Config is how a client reaches the provider and how long it keeps
// trying; agent.Config holds the same settings, with their documentation.
type Config struct {
	BaseURL string
	// APIKey is sent as a bearer token and redacted from every error text.
	APIKey string
	// Model is the primary model; FallbackModels take over the same
	// conversation, in order, when the current model's retries are spent.
	Model          string
	FallbackModels []string
	// CallTimeout bounds each transport attempt.
	CallTimeout time.Duration
	// TransientRetries bounds the retries of one call on one model.
	TransientRetries int
	// MaxRetryAfter caps how long a provider's delay is honoured in place.
	MaxRetryAfter time.Duration
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	EchoReasoning  bool
	Stream         bool
	// IdleTimeout is how long a streamed call may go without a byte.
	IdleTimeout        time.Duration
	WireAPI            string // APIChat (also when empty) or APIResponses
	ReasoningEffort    string
	ExtraBody          map[string]any
	MaxTokensFieldName string
	// HTTPClient, when set, carries the requests (tests, proxies).
	HTTPClient *http.Client
	// Deferrable: provider limits end the call with *DeferredError instead
	// of failing it (off for runs whose limits predate deferrals).
	Deferrable bool
}
