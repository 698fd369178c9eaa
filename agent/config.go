package agent

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/agent/wire"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// Defaults of one session's bounds.
const (
	DefaultCallTimeout      = 5 * time.Minute
	DefaultMaxModelCalls    = 100
	DefaultMaxRepairs       = 3
	DefaultMaxReminders     = 2
	DefaultTransientRetries = 5
	DefaultMaxRetryAfter    = 60 * time.Second
	DefaultRetryBaseDelay   = time.Second
	DefaultRetryMaxDelay    = 30 * time.Second
	DefaultMaxHandoffChars  = 16384
	DefaultContextTokens    = 131072
	DefaultVerifyTimeout    = 600 * time.Second
	DefaultVerifyAttempts   = 3
	DefaultIdleTimeout      = 120 * time.Second
)

// Wire APIs a session can speak (RALPH_WIRE_API).
const (
	WireChat      = wire.APIChat
	WireResponses = wire.APIResponses
)

// Output-limit field names (RALPH_MAX_TOKENS_FIELD); empty picks by model.
const (
	MaxTokensField           = wire.MaxTokensField
	MaxCompletionTokensField = wire.MaxCompletionTokensField
)

// Config is how one session talks to the model and how far it may go. It is
// deployment-owned: nothing in it comes from the caller of a run.
type Config struct {
	// BaseURL of the OpenAI-compatible API (ending in /v1 for most
	// providers); empty means go-openai's default, api.openai.com.
	BaseURL string
	// APIKey is sent as a bearer token and never written anywhere: events,
	// transcripts and errors have it redacted.
	APIKey string
	Model  string
	// FallbackModels (served by the same endpoint) take over the same
	// conversation, in order, when the current model's retries are spent.
	FallbackModels []string
	// CallTimeout bounds one model call (each transport attempt).
	CallTimeout time.Duration
	// MaxModelCalls bounds the completed model calls of a session; the last
	// one offers only submit_report.
	MaxModelCalls int
	// MaxRepairs bounds how often an invalid report is sent back for repair.
	MaxRepairs int
	// MaxReminders bounds the reminders after text answers without a tool call.
	MaxReminders int
	// TransientRetries bounds the retries of one model call after transient
	// errors (429, 408, 409, 5xx, non-JSON pages, network).
	TransientRetries int
	// MaxRetryAfter caps how long a Retry-After header is honoured.
	MaxRetryAfter time.Duration
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff used
	// when the provider gives no Retry-After.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// ContextTokens is the model's context window as the deployment knows it.
	ContextTokens int
	// MaxOutputTokens, when positive, is sent as each request's output limit.
	MaxOutputTokens int
	// EchoReasoning sends reasoning_content back on assistant turns.
	EchoReasoning bool
	// Stream sends model calls streamed (stream: true, usage in the last
	// chunk); off for a provider that cannot stream.
	Stream bool
	// IdleTimeout is how long a streamed call may go without a byte before
	// it counts as a transient failure.
	IdleTimeout time.Duration
	// WireAPI is WireChat (chat completions; also when empty) or WireResponses.
	WireAPI string
	// ReasoningEffort (low, medium, high) is sent to reasoning models; empty
	// sends none.
	ReasoningEffort string
	// ExtraBody is merged into every request body (provider-required fields).
	ExtraBody map[string]any
	// MaxTokensFieldName names the output-limit field; empty: max_tokens,
	// except max_completion_tokens for OpenAI reasoning models.
	MaxTokensFieldName string
	// VerifyTimeout bounds one run of the verify command.
	VerifyTimeout time.Duration
	// VerifyAttempts bounds the failed verifications of one session; a
	// further complete report is refused without running the command.
	VerifyAttempts int
	// ToolLimits bound the workspace tools; zero fields take their defaults.
	ToolLimits tools.Limits
	// Sandbox runs the session's commands (run_command and the verify
	// command); nil runs them directly with the allowlisted environment.
	Sandbox *sandbox.Sandbox
	// HTTPClient, when set, carries the model requests (tests, proxies).
	HTTPClient *http.Client
	// Tracing receives a span per model call, tool call and verification,
	// under the span in the session's ctx; the zero value traces nothing.
	Tracing tracing.Options
}

// DefaultConfig is every default of a session, without an endpoint.
func DefaultConfig() Config {
	return Config{
		CallTimeout:      DefaultCallTimeout,
		MaxModelCalls:    DefaultMaxModelCalls,
		MaxRepairs:       DefaultMaxRepairs,
		MaxReminders:     DefaultMaxReminders,
		TransientRetries: DefaultTransientRetries,
		MaxRetryAfter:    DefaultMaxRetryAfter,
		RetryBaseDelay:   DefaultRetryBaseDelay,
		RetryMaxDelay:    DefaultRetryMaxDelay,
		ContextTokens:    DefaultContextTokens,
		EchoReasoning:    true,
		Stream:           true,
		IdleTimeout:      DefaultIdleTimeout,
		WireAPI:          WireChat,
		VerifyTimeout:    DefaultVerifyTimeout,
		VerifyAttempts:   DefaultVerifyAttempts,
		ToolLimits:       tools.DefaultLimits(),
	}
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	durations := []struct {
		name  string
		value time.Duration
	}{
		{"call timeout", c.CallTimeout}, {"max Retry-After", c.MaxRetryAfter},
		{"retry base delay", c.RetryBaseDelay}, {"retry max delay", c.RetryMaxDelay},
		{"verify timeout", c.VerifyTimeout}, {"model idle timeout", c.IdleTimeout},
	}
	for _, d := range durations {
		if d.value <= 0 {
			return fmt.Errorf("agent config: %s must be positive, got %s", d.name, d.value)
		}
	}
	counts := []struct {
		name     string
		value    int
		minValue int
	}{
		{"max model calls", c.MaxModelCalls, 1}, {"max repairs", c.MaxRepairs, 0},
		{"max reminders", c.MaxReminders, 0}, {"transient retries", c.TransientRetries, 0},
		{"context tokens", c.ContextTokens, 1}, {"max output tokens", c.MaxOutputTokens, 0},
		{"verify attempts", c.VerifyAttempts, 1},
	}
	for _, n := range counts {
		if n.value < n.minValue {
			return fmt.Errorf("agent config: %s must be at least %d, got %d", n.name, n.minValue, n.value)
		}
	}
	if err := c.validateWire(); err != nil {
		return err
	}
	if c.Model == "" {
		return fmt.Errorf("agent config: model name is required")
	}
	for i, m := range c.FallbackModels {
		if strings.TrimSpace(m) == "" || strings.TrimSpace(m) != m {
			return fmt.Errorf("agent config: fallback model %d is %q: names must be non-empty and trimmed", i+1, m)
		}
	}
	return nil
}

// validateWire checks the settings of how requests are sent.
func (c Config) validateWire() error {
	switch c.WireAPI {
	case "", WireChat, WireResponses: // empty: chat
	default:
		return fmt.Errorf("agent config: wire API %q is not one of %s, %s", c.WireAPI, WireChat, WireResponses)
	}
	switch c.ReasoningEffort {
	case "", "low", "medium", "high":
	default:
		return fmt.Errorf("agent config: reasoning effort %q is not one of low, medium, high", c.ReasoningEffort)
	}
	switch c.MaxTokensFieldName {
	case "", MaxTokensField, MaxCompletionTokensField:
	default:
		return fmt.Errorf("agent config: max tokens field %q is not one of %s, %s", c.MaxTokensFieldName, MaxTokensField, MaxCompletionTokensField)
	}
	return nil
}
