package traces

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/interceptor"
)

func newTestTracer(t *testing.T) (*replaySafeTracer, *tracetest.InMemoryExporter, *Provider) {
	exp := tracetest.NewInMemoryExporter()
	p := New(sdktrace.NewSimpleSpanProcessor(exp), resource.Empty(), false)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	ci, err := p.ClientInterceptor()
	if err != nil {
		t.Fatal(err)
	}
	if ci == nil {
		t.Fatal("no interceptor")
	}
	inner, err := newInner(p)
	if err != nil {
		t.Fatal(err)
	}
	return &replaySafeTracer{Tracer: inner, runs: p.runs}, exp, p
}

// A workflow span started twice for one run (the first worker's copy torn
// down, a second worker rebuilding the run from history) is one span: the
// same ids both times, so its children stay in one tree, and exported once,
// by the copy whose workflow function returned.
func TestWorkflowSpanIsExportedOnceAcrossRebuilds(t *testing.T) {
	tr, exp, _ := newTestTracer(t)
	starter, err := tr.StartSpan(&interceptor.TracerStartSpanOptions{Operation: "StartWorkflow", Name: "Ralph"})
	if err != nil {
		t.Fatal(err)
	}
	header, err := tr.MarshalSpan(starter)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := tr.UnmarshalSpan(header)
	if err != nil {
		t.Fatal(err)
	}
	start := func() interceptor.TracerSpan {
		s, err := tr.StartSpan(&interceptor.TracerStartSpanOptions{Operation: "RunWorkflow", Name: "Ralph", Parent: parent,
			Tags: map[string]string{runIDTag: "run-1", "temporalWorkflowID": "wf"}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := start()
	child, err := tr.StartSpan(&interceptor.TracerStartSpanOptions{Operation: "StartActivity", Name: "RunRound", Parent: first, ToHeader: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.MarshalSpan(first); err != nil {
		t.Fatalf("marshal a workflow span: %v", err)
	}
	child.Finish(&interceptor.TracerFinishSpanOptions{})
	first.Finish(&interceptor.TracerFinishSpanOptions{}) // torn down: the workflow did not return

	second := start()
	tr.runs.returned.Store("run-1", struct{}{})
	second.Finish(&interceptor.TracerFinishSpanOptions{})
	starter.Finish(&interceptor.TracerFinishSpanOptions{})

	spans := exp.GetSpans()
	var runs []tracetest.SpanStub
	var act tracetest.SpanStub
	for _, s := range spans {
		switch s.Name {
		case "RunWorkflow:Ralph":
			runs = append(runs, s)
		case "StartActivity:RunRound":
			act = s
		}
	}
	if len(runs) != 1 {
		t.Fatalf("%d workflow spans exported, want 1", len(runs))
	}
	run := runs[0]
	if run.SpanContext.SpanID() != runIDs("run-1").spanID {
		t.Errorf("workflow span id %s, want the run's fixed id", run.SpanContext.SpanID())
	}
	if act.Parent.SpanID() != run.SpanContext.SpanID() || act.SpanContext.TraceID() != run.SpanContext.TraceID() {
		t.Errorf("the activity span's parent is %s, want the workflow span %s", act.Parent.SpanID(), run.SpanContext.SpanID())
	}
	if run.Parent.SpanID() == [8]byte{} || run.SpanContext.TraceID() != spans[len(spans)-1].SpanContext.TraceID() {
		t.Errorf("the workflow span is not in the starter's trace")
	}
	if _, left := tr.runs.returned.Load("run-1"); left {
		t.Error("the return mark was not consumed")
	}
}

// Without a parent (a run started by the temporal CLI) the trace id comes
// from the run id too, so a rebuilt workflow span stays in its trace.
func TestWorkflowSpanWithoutParentKeepsItsTrace(t *testing.T) {
	tr, exp, _ := newTestTracer(t)
	for range 2 {
		s, err := tr.StartSpan(&interceptor.TracerStartSpanOptions{Operation: "RunWorkflow", Name: "Ralph", Tags: map[string]string{runIDTag: "run-2"}})
		if err != nil {
			t.Fatal(err)
		}
		tr.runs.returned.Store("run-2", struct{}{})
		s.Finish(&interceptor.TracerFinishSpanOptions{})
	}
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].SpanContext.TraceID() != runIDs("run-2").traceID || spans[1].SpanContext.TraceID() != spans[0].SpanContext.TraceID() {
		t.Fatalf("spans %v", spans)
	}
}
