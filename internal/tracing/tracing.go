// Package tracing holds Ralph's span names, attribute keys and the small
// helpers every layer uses to open and close its spans (rounds, model
// calls, tool calls, verification, checkpoints, reviews). It uses only the
// OpenTelemetry API: the worker decides whether spans go anywhere (a nil
// Tracer is a no-op), so the agent stays free of any exporter or Temporal
// import.
package tracing

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName is the tracer name of every Ralph span.
const InstrumentationName = "github.com/ralph-temporal/ralph"

// Span names (docs/observability.md#traces). Model and tool spans are named
// "chat <model>" and "execute_tool <tool>" (ChatSpanName, ToolSpanName).
const (
	SpanRound      = "ralph.round"
	SpanVerify     = "ralph.verify"
	SpanCheckpoint = "ralph.checkpoint"
	SpanReview     = "ralph.review"
	SpanPlan       = "ralph.plan"
)

// Ralph's own attribute keys.
const (
	AttrRound         = attribute.Key("ralph.round")
	AttrAttempt       = attribute.Key("ralph.attempt")
	AttrWorkspace     = attribute.Key("ralph.workspace")
	AttrSessionID     = attribute.Key("ralph.session_id")
	AttrReportStatus  = attribute.Key("ralph.report.status")
	AttrOutcome       = attribute.Key("ralph.outcome")
	AttrVerifyExit    = attribute.Key("ralph.verify.exit_code")
	AttrVerifyPassed  = attribute.Key("ralph.verify.passed")
	AttrCommit        = attribute.Key("ralph.checkpoint.commit")
	AttrFilesChanged  = attribute.Key("ralph.checkpoint.files_changed")
	AttrReviewVerdict = attribute.Key("ralph.review.verdict")
	AttrPlanStatus    = attribute.Key("ralph.plan.status")
)

// OpenTelemetry GenAI semantic-convention keys.
const (
	AttrOperation      = attribute.Key("gen_ai.operation.name")
	AttrProvider       = attribute.Key("gen_ai.provider.name")
	AttrRequestModel   = attribute.Key("gen_ai.request.model")
	AttrResponseModel  = attribute.Key("gen_ai.response.model")
	AttrResponseID     = attribute.Key("gen_ai.response.id")
	AttrFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	AttrInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	AttrToolName       = attribute.Key("gen_ai.tool.name")
	AttrToolCallID     = attribute.Key("gen_ai.tool.call.id")
	AttrToolType       = attribute.Key("gen_ai.tool.type")
	AttrErrorType      = attribute.Key("error.type")
	AttrInputMessages  = attribute.Key("gen_ai.input.messages")
	AttrOutputMessages = attribute.Key("gen_ai.output.messages")
	AttrToolArguments  = attribute.Key("gen_ai.tool.call.arguments")
	AttrToolResult     = attribute.Key("gen_ai.tool.call.result")
)

// GenAI values.
const (
	OperationChat        = "chat"
	OperationExecuteTool = "execute_tool"
	ProviderOpenAI       = "openai"
)

// EnvCaptureContent is the standard opt-in for message content in spans.
const EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Options are how a worker traces: where its spans go and whether message
// content (prompts, completions, tool arguments and results) is recorded.
// The zero value traces nothing.
type Options struct {
	// Tracer receives every Ralph span; nil is a no-op tracer.
	Tracer trace.Tracer
	// CaptureContent records message content on the spans
	// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
	CaptureContent bool
}

var noopTracer = noop.NewTracerProvider().Tracer(InstrumentationName)

// tracer is o.Tracer or the no-op one.
func (o Options) tracer() trace.Tracer {
	if o.Tracer == nil {
		return noopTracer
	}
	return o.Tracer
}

// Start opens an internal span named name under ctx's span.
func (o Options) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return o.tracer().Start(ctx, name, trace.WithAttributes(attrs...))
}

// StartChat opens the span of one model call (GenAI "chat" client span).
func (o Options) StartChat(ctx context.Context, model string) (context.Context, trace.Span) {
	return o.tracer().Start(ctx, ChatSpanName(model), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		AttrOperation.String(OperationChat), AttrProvider.String(ProviderOpenAI), AttrRequestModel.String(model)))
}

// StartTool opens the span of one tool call (GenAI "execute_tool").
func (o Options) StartTool(ctx context.Context, tool, callID string) (context.Context, trace.Span) {
	return o.tracer().Start(ctx, ToolSpanName(tool), trace.WithAttributes(
		AttrOperation.String(OperationExecuteTool), AttrToolName.String(tool),
		AttrToolCallID.String(callID), AttrToolType.String("function")))
}

// Content sets key to v (a string as is, anything else as JSON) only when
// content capture is on: the one gate every message-content attribute
// passes.
func (o Options) Content(span trace.Span, key attribute.Key, v any) {
	if !o.CaptureContent || !span.IsRecording() {
		return
	}
	if s, ok := v.(string); ok {
		span.SetAttributes(key.String(s))
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	span.SetAttributes(key.String(string(b)))
}

// ChatSpanName is the GenAI span name of a model call.
func ChatSpanName(model string) string { return OperationChat + " " + model }

// ToolSpanName is the GenAI span name of a tool call.
func ToolSpanName(tool string) string { return OperationExecuteTool + " " + tool }

// Fail marks span failed with errType and a message the caller has already
// made safe to record (redacted: no key, no content).
func Fail(span trace.Span, errType, message string) {
	span.SetAttributes(AttrErrorType.String(errType))
	span.SetStatus(codes.Error, message)
}
