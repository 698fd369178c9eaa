package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// traced gives the harness an in-memory span exporter and runs the session
// under a parent span, as the activity does.
func (h *harness) traced(capture bool) *tracetest.InMemoryExporter {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h.t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	h.cfg.Tracing = tracing.Options{Tracer: tp.Tracer("test"), CaptureContent: capture}
	return exp
}

func (h *harness) runTraced() (trace.SpanContext, error) {
	h.t.Helper()
	ctx, parent := h.cfg.Tracing.Tracer.Start(context.Background(), "parent")
	_, err := h.runCtx(ctx)
	parent.End()
	return parent.SpanContext(), err
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func named(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// noKey fails when the API key appears anywhere in a span.
func noKey(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	data, err := json.Marshal(spans)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), testKey) {
		t.Fatalf("a span carries the API key: %s", data)
	}
}

var contentKeys = []attribute.Key{tracing.AttrInputMessages, tracing.AttrOutputMessages, tracing.AttrToolArguments, tracing.AttrToolResult}

func TestTraceSpansOfASession(t *testing.T) {
	usage := func(in, out int) *openai.Usage { return &openai.Usage{PromptTokens: in, CompletionTokens: out} }
	write := call("write_file", map[string]string{"path": "hello.txt", "content": "hello canary-content"})
	write.Usage = usage(101, 11)
	missing := call("read_file", map[string]string{"path": "missing.txt"})
	missing.Usage = usage(202, 22)
	rep := submit(validContinue)
	rep.Usage = usage(303, 33)
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{write, missing, rep}})
	exp := h.traced(false)
	parent, err := h.runTraced()
	if err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	noKey(t, spans)

	chats := named(spans, "chat fake-model")
	if len(chats) != len(h.requests()) || len(chats) != 3 {
		t.Fatalf("%d chat spans for %d model requests, want 3", len(chats), len(h.requests()))
	}
	for i, c := range chats {
		a := attrs(c)
		want := map[attribute.Key]any{
			tracing.AttrOperation: "chat", tracing.AttrProvider: "openai", tracing.AttrRequestModel: "fake-model",
			tracing.AttrResponseModel: "fake-model", tracing.AttrResponseID: fmt.Sprintf("chatcmpl-fake-%d", i),
			tracing.AttrInputTokens: int64(101 * (i + 1)), tracing.AttrOutputTokens: int64(11 * (i + 1)),
		}
		for k, v := range want {
			if a[k].AsInterface() != v {
				t.Errorf("chat %d: %s = %v, want %v", i, k, a[k].AsInterface(), v)
			}
		}
		if got := a[tracing.AttrFinishReasons].AsStringSlice(); len(got) != 1 || got[0] != "tool_calls" {
			t.Errorf("chat %d: finish reasons %v", i, got)
		}
		if c.Parent.SpanID() != parent.SpanID() || c.SpanKind.String() != "client" {
			t.Errorf("chat %d: parent %s kind %s, want the session's parent span, client", i, c.Parent.SpanID(), c.SpanKind)
		}
		if c.Status.Code == codes.Error {
			t.Errorf("chat %d failed: %v", i, c.Status)
		}
	}
	tools := map[string]tracetest.SpanStub{}
	for _, name := range []string{"write_file", "read_file", "submit_report"} {
		got := named(spans, "execute_tool "+name)
		if len(got) != 1 {
			t.Fatalf("%d execute_tool %s spans, want 1", len(got), name)
		}
		s := got[0]
		tools[name] = s
		a := attrs(s)
		if a[tracing.AttrOperation].AsString() != "execute_tool" || a[tracing.AttrToolName].AsString() != name || a[tracing.AttrToolCallID].AsString() == "" {
			t.Errorf("execute_tool %s attributes: %v", name, s.Attributes)
		}
		if s.Parent.SpanID() != parent.SpanID() {
			t.Errorf("execute_tool %s is not a child of the session's span", name)
		}
	}
	if tools["read_file"].Status.Code != codes.Error || tools["write_file"].Status.Code == codes.Error || tools["submit_report"].Status.Code == codes.Error {
		t.Errorf("tool statuses: read_file %v, write_file %v, submit_report %v; want only the failed read_file an error",
			tools["read_file"].Status, tools["write_file"].Status, tools["submit_report"].Status)
	}
	// The ids on the spans are the ids the model sent.
	if id := attrs(tools["write_file"])[tracing.AttrToolCallID].AsString(); id != "call_0_0" {
		t.Errorf("write_file call id %q, want call_0_0", id)
	}
	for _, s := range spans {
		for _, k := range contentKeys {
			if _, ok := attrs(s)[k]; ok {
				t.Errorf("span %s carries %s without the opt-in", s.Name, k)
			}
		}
	}
	data, _ := json.Marshal(spans)
	if strings.Contains(string(data), "canary-content") || strings.Contains(string(data), objective) {
		t.Error("message content reached a span without the opt-in")
	}
}

func TestTraceContentOnlyWhenOptedIn(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("write_file", map[string]string{"path": "hello.txt", "content": "hello canary-content"}),
		submit(validContinue),
	}})
	exp := h.traced(true)
	if _, err := h.runTraced(); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	noKey(t, spans)
	chat := named(spans, "chat fake-model")[0]
	if in := attrs(chat)[tracing.AttrInputMessages].AsString(); !strings.Contains(in, "Write hello.txt") {
		t.Errorf("input messages %q do not hold the prompt", in)
	}
	if out := attrs(chat)[tracing.AttrOutputMessages].AsString(); !strings.Contains(out, "canary-content") {
		t.Errorf("output messages %q do not hold the completion", out)
	}
	w := attrs(named(spans, "execute_tool write_file")[0])
	if !strings.Contains(w[tracing.AttrToolArguments].AsString(), "canary-content") || w[tracing.AttrToolResult].AsString() == "" {
		t.Errorf("tool content: %v", w)
	}
}

func TestTraceModelFailureIsAnErrorWithoutTheKey(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Status(503, "busy"),
		fakeopenai.Status(401, "Incorrect API key provided: "+testKey),
	}})
	exp := h.traced(true)
	_, err := h.runTraced()
	if !agent.IsChildFailure(err) {
		t.Fatalf("err = %v, want a child failure", err)
	}
	spans := exp.GetSpans()
	noKey(t, spans)
	chats := named(spans, "chat fake-model")
	if len(chats) != 1 {
		t.Fatalf("%d chat spans, want 1 (a retry is an event on the call's span)", len(chats))
	}
	c := chats[0]
	if c.Status.Code != codes.Error || attrs(c)[tracing.AttrErrorType].AsString() != "refused" || !strings.Contains(c.Status.Description, "401") {
		t.Errorf("failed call: status %v, attributes %v", c.Status, c.Attributes)
	}
	if len(c.Events) != 1 || c.Events[0].Name != "retry" {
		t.Errorf("events %v, want one retry", c.Events)
	}
}

func TestTraceVerifySpan(t *testing.T) {
	complete := fakeopenai.ReportArgs{Status: "complete", Summary: "Done.", Evidence: []string{"checked"}, NextSteps: []string{}}
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(complete), submit(validContinue)}})
	h.req.VerifyCommand = "exit 3"
	exp := h.traced(false)
	if _, err := h.runTraced(); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	verifies := named(spans, tracing.SpanVerify)
	if len(verifies) != 1 {
		t.Fatalf("%d verify spans, want 1", len(verifies))
	}
	v := verifies[0]
	a := attrs(v)
	if a[tracing.AttrVerifyExit].AsInt64() != 3 || a[tracing.AttrVerifyPassed].AsBool() || v.Status.Code != codes.Error {
		t.Errorf("verify span: %v %v", v.Attributes, v.Status)
	}
	submits := named(spans, "execute_tool submit_report")
	if len(submits) != 2 || v.Parent.SpanID() != submits[0].SpanContext.SpanID() {
		t.Errorf("the verify span is not a child of the first submit_report call")
	}
	if submits[0].Status.Code != codes.Error {
		t.Errorf("the refused completion's tool span is not an error")
	}
}
