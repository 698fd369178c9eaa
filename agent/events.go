package agent

import (
	"encoding/json"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/wire"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// EventKind names what happened in a session.
type EventKind string

// Event kinds, in the order a session emits them.
const (
	EventSessionStart  EventKind = "session_start"
	EventModelRequest  EventKind = "model_request"
	EventModelResponse EventKind = "model_response"
	EventModelError    EventKind = wire.EventError
	// EventModelProgress: a streamed answer is arriving (StreamedTokens so
	// far, FirstTokenMs); kept out of transcripts.
	EventModelProgress EventKind = wire.EventProgress
	// EventModelWarning: the provider's answer suggests a misconfiguration
	// the run survives but the operator should fix (Error says what).
	EventModelWarning EventKind = "model_warning"
	EventToolCall     EventKind = "tool_call"
	EventToolResult   EventKind = "tool_result"
	// EventHandoff: a bound was reached and only submit_report is offered
	// from now on (Bound names it).
	EventHandoff EventKind = "handoff"
	// EventModelFallback: the current model's retries are spent and the
	// same conversation goes on with the next fallback model (Model).
	EventModelFallback EventKind = wire.EventFallback
	EventSessionEnd    EventKind = "session_end"
	// The round's own verify step: its own kinds, so no tool the model names
	// can pass for it.
	EventVerifyStart  EventKind = "verify_start"
	EventVerifyResult EventKind = "verify_result"
	// EventNetwork: one connection a command (run_command or the verify
	// command) asked the sandbox's proxy for, allowed or refused; written
	// before that command's result.
	EventNetwork EventKind = "network"
	// EventProtectedRestored: protected paths the session changed were
	// restored (Paths lists them).
	EventProtectedRestored EventKind = "protected_restored"
	// EventAgentOutput: a line the agent CLI printed (its JSON events),
	// in Output; EventAgentExit: the CLI process ended (Output says how).
	EventAgentOutput EventKind = "agent_output"
	EventAgentExit   EventKind = "agent_exit"
	// EventForgedSubmission: a call of the finishing tool that reached the
	// worker without the model having asked for it (docs/security.md); it never
	// counts (Arguments, and Output: why it was refused).
	EventForgedSubmission EventKind = "forged_submission"
)

// Outcomes recorded in a session_end event.
const (
	OutcomeReport           = "report"
	OutcomeChildFailure     = "child_failure"
	OutcomeModelUnavailable = "model_unavailable"
	OutcomeDeferred         = "deferred"
	OutcomeCancelled        = "cancelled"
	OutcomeHarnessError     = "harness_error"
)

// Event is one line of a session's story: a transcript line, and what the
// activity's heartbeat reports (step, last tool). Fields not relevant to a
// kind are empty. It never carries the API key.
type Event struct {
	Time      time.Time `json:"time"`
	Kind      EventKind `json:"kind"`
	SessionID string    `json:"sessionId"`
	// Step is the model call the event belongs to (1-based); tool events
	// carry the step whose answer requested them.
	Step int `json:"step,omitempty"`

	// session_start (the primary model), model_response (the model that
	// answered), model_fallback (the model taking over), session_end (the
	// model that produced the report, or was in use when the session ended)
	Round     int    `json:"round,omitempty"`
	MaxRounds int    `json:"maxRounds,omitempty"`
	Model     string `json:"model,omitempty"`
	BaseURL   string `json:"baseUrl,omitempty"`

	// model_request: the messages appended since the previous request (the
	// conversation only ever grows), the tools offered by name, and on the
	// first request every tool's full definition: the JSON array exactly as
	// the request sends it (encoded once per worker, not once per session).
	Messages        []openai.ChatCompletionMessage `json:"messages,omitempty"`
	Tools           []string                       `json:"tools,omitempty"`
	ToolDefinitions json.RawMessage                `json:"toolDefinitions,omitempty"`
	// ContextTokens is the request's size in tokens as the session knows it
	// (reported prompt tokens plus an estimate of what was appended); on
	// model_response it is the prompt tokens the provider reported.
	ContextTokens int `json:"contextTokens,omitempty"`
	// Compacted marks the compacted hand-off request: Messages then holds
	// the whole (replaced) conversation.
	Compacted bool `json:"compacted,omitempty"`

	// model_response / model_error
	Attempt      int                           `json:"attempt,omitempty"`
	Message      *openai.ChatCompletionMessage `json:"message,omitempty"`
	FinishReason string                        `json:"finishReason,omitempty"`
	HTTPStatus   int                           `json:"httpStatus,omitempty"`
	Transient    bool                          `json:"transient,omitempty"`
	RetryInMs    int64                         `json:"retryInMs,omitempty"`
	// model_progress: estimated tokens of the answer streamed so far, and
	// the milliseconds from the request to its first token.
	StreamedTokens int   `json:"streamedTokens,omitempty"`
	FirstTokenMs   int64 `json:"firstTokenMs,omitempty"`

	// tool_call / tool_result
	Tool       string `json:"tool,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	Output     string `json:"output,omitempty"`
	Failed     bool   `json:"failed,omitempty"`
	// ExitCode of the verify command (-1: timed out), on its tool_result.
	ExitCode   *int  `json:"exitCode,omitempty"`
	DurationMs int64 `json:"durationMs,omitempty"`

	// network
	Network *netproxy.Record `json:"network,omitempty"`

	// handoff
	Bound string `json:"bound,omitempty"`

	// protected_restored
	Paths []string `json:"paths,omitempty"`

	// session_end (Usage also on model_response: that call's tokens)
	Outcome string         `json:"outcome,omitempty"`
	Report  *report.Report `json:"report,omitempty"`
	Review  *report.Review `json:"review,omitempty"`
	Plan    *plan.Plan     `json:"plan,omitempty"`
	Usage   *usage.Usage   `json:"usage,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// Observer receives every event synchronously, in order, on the session's
// goroutine; it must be quick.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f.
func (f ObserverFunc) Observe(e Event) { f(e) }

// Observers fans events out to several observers (nil ones are skipped).
func Observers(list ...Observer) Observer {
	return ObserverFunc(func(e Event) {
		for _, o := range list {
			if o != nil {
				o.Observe(e)
			}
		}
	})
}

// durationMs is d in whole milliseconds, at least 1 for any positive d.
func durationMs(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
