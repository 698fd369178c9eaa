package activities_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/report"
)

func tracedConfig(t *testing.T, exp *tracetest.InMemoryExporter, more func(*activities.Config)) func(*activities.Config) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return func(c *activities.Config) {
		c.Agent.Tracing = tracing.Options{Tracer: tp.Tracer("test")}
		if more != nil {
			more(c)
		}
	}
}

func spanAttr(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func oneSpan(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s spans, want 1", len(found), name)
	}
	return found[0]
}

func noKeyInSpans(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	data, _ := json.Marshal(spans)
	if strings.Contains(string(data), testKey) {
		t.Fatal("a span carries the API key")
	}
}

// A round's span holds the session's model and tool spans and the
// checkpoint, with the round, workspace, session id and report status.
func TestRunRoundSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	f := newFixture(t, writes("notes.txt"), context.Background(),
		tracedConfig(t, exp, func(c *activities.Config) { c.Git.Mode = gitws.ModeLocal }))
	out, err := f.run(roundInput("repo"))
	if err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	noKeyInSpans(t, spans)
	round := oneSpan(t, spans, tracing.SpanRound)
	if spanAttr(round, tracing.AttrRound).AsInt64() != 2 || spanAttr(round, tracing.AttrWorkspace).AsString() != "repo" ||
		spanAttr(round, tracing.AttrSessionID).AsString() != out.SessionID || spanAttr(round, tracing.AttrReportStatus).AsString() != "continue" {
		t.Errorf("round span attributes %v (session %s)", round.Attributes, out.SessionID)
	}
	cp := oneSpan(t, spans, tracing.SpanCheckpoint)
	if cp.Parent.SpanID() != round.SpanContext.SpanID() || spanAttr(cp, tracing.AttrCommit).AsString() != out.Checkpoint.Commit {
		t.Errorf("checkpoint span %v: want a child of the round with commit %s", cp.Attributes, out.Checkpoint.Commit)
	}
	children := 0
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat ") || strings.HasPrefix(s.Name, "execute_tool ") {
			children++
			if s.Parent.SpanID() != round.SpanContext.SpanID() {
				t.Errorf("%s is not a child of the round span", s.Name)
			}
		}
	}
	if want := f.srv.RequestCount() * 2; children != want {
		t.Errorf("%d chat and execute_tool spans, want %d (one model call and one tool call per request)", children, want)
	}
}

// A failed round's span is an error naming the failure type, without the key.
func TestRunRoundSpanOfAFailure(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Status(401, "bad key "+testKey)}},
		context.Background(), tracedConfig(t, exp, nil))
	if _, err := f.run(roundInput("fails")); err == nil {
		t.Fatal("the round did not fail")
	}
	spans := exp.GetSpans()
	noKeyInSpans(t, spans)
	round := oneSpan(t, spans, tracing.SpanRound)
	if round.Status.Code != codes.Error || spanAttr(round, tracing.AttrErrorType).AsString() != activities.ErrTypeChildFailed {
		t.Errorf("round span status %v, attributes %v", round.Status, round.Attributes)
	}
}

// The reviewer's session has its own ralph.review span with the verdict.
func TestReviewCompletionSpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "Looks right."})),
	}}, context.Background(), tracedConfig(t, exp, nil))
	val, err := f.env.ExecuteActivity(activities.ReviewCompletionName, activities.ReviewInput{
		Objective: "Write notes.txt.", Round: 1, MaxRounds: 3, Workspace: "reviewed", MaxHandoffChars: 16384,
		Report: report.Report{Status: "complete", Summary: "Done.", Evidence: []string{"notes.txt"}, NextSteps: []string{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out activities.ReviewOutput
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	noKeyInSpans(t, spans)
	rev := oneSpan(t, spans, tracing.SpanReview)
	if spanAttr(rev, tracing.AttrReviewVerdict).AsString() != "approve" || spanAttr(rev, tracing.AttrSessionID).AsString() != out.SessionID {
		t.Errorf("review span attributes %v", rev.Attributes)
	}
	chat := oneSpan(t, spans, "chat fake-model")
	if chat.Parent.SpanID() != rev.SpanContext.SpanID() {
		t.Error("the reviewer's model call is not a child of the review span")
	}
}
