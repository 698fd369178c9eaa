package agent

import (
	"context"
	"errors"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/trace"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/agent/wire"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// traceResponse records a completed model call on its chat span: what the
// provider answered with (model, id, finish reasons) and the tokens it
// reported. No content: that goes through tracing.Options.Content only.
func traceResponse(span trace.Span, resp openai.ChatCompletionResponse) {
	reasons := make([]string, len(resp.Choices))
	for i, c := range resp.Choices {
		reasons[i] = string(c.FinishReason)
	}
	span.SetAttributes(
		tracing.AttrResponseModel.String(resp.Model),
		tracing.AttrResponseID.String(resp.ID),
		tracing.AttrFinishReasons.StringSlice(reasons),
		tracing.AttrInputTokens.Int(resp.Usage.PromptTokens),
		tracing.AttrOutputTokens.Int(resp.Usage.CompletionTokens),
	)
}

// traceModelError marks a failed model call's span: its kind as error.type
// and the error text with the API key redacted.
func (s *session) traceModelError(span trace.Span, err error) {
	tracing.Fail(span, modelErrorType(err), Redact(err.Error(), s.cfg.APIKey))
}

func modelErrorType(err error) string {
	var tooLong *wire.ContextLengthError
	switch {
	case errors.As(err, &tooLong):
		return "context_length_exceeded"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	case IsModelUnavailable(err):
		return "model_unavailable"
	case IsChildFailure(err):
		return "refused"
	default:
		return "_OTHER"
	}
}

// traceToolResult ends what a tool call's span records: its failure (the
// tool's own, answered to the model, or the harness's) and, on opt-in, its
// arguments and result.
func (s *session) traceToolResult(span trace.Span, args string, res tools.Result, content string, err error) {
	s.cfg.Tracing.Content(span, tracing.AttrToolArguments, args)
	switch {
	case err != nil:
		tracing.Fail(span, "harness", Redact(err.Error(), s.cfg.APIKey))
	case res.Failed:
		tracing.Fail(span, "tool_error", "the tool failed; its result was returned to the model")
	}
	if content != "" {
		s.cfg.Tracing.Content(span, tracing.AttrToolResult, content)
	}
}
