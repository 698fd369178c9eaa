package traces

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// The Temporal SDK starts the RunWorkflow span each time the workflow
// function starts: once per run, and again whenever a worker rebuilds the
// run from its history (after a restart or a cache eviction); the torn-down
// copy ends as well, when its coroutine exits. Exported as is, a restart
// mid-run would show two workflow spans with different ids, the first cut
// short. Here the workflow span gets ids derived from the run id, so every
// rebuild is the same span, and it is exported only by the worker whose
// workflow function returned live (not while replaying, as it does again
// for a query on a closed run): once per run. (Activity and timer
// spans are already skipped during replay by the SDK.)

const (
	operationRunWorkflow = "RunWorkflow"
	runIDTag             = "temporalRunID"
)

// runSpans is the state shared by the wrapper tracer, its span starter and
// the return marker.
type runSpans struct {
	// mu serialises StartSpan so the span starter can read pending without a
	// race: StartSpan holds it across the synchronous call that ends in
	// startSpan.
	mu      sync.Mutex
	pending *fixedIDs
	// returned holds the run ids whose workflow function returned.
	returned sync.Map
}

func newRunSpans() *runSpans { return &runSpans{} }

type fixedIDs struct {
	traceID trace.TraceID // used only when the span has no parent
	spanID  trace.SpanID
}

type fixedIDsKey struct{}

func runIDs(runID string) fixedIDs {
	sum := sha256.Sum256([]byte("ralph-workflow-span\x00" + runID))
	var ids fixedIDs
	copy(ids.traceID[:], sum[:16])
	copy(ids.spanID[:], sum[16:24])
	return ids
}

// startSpan is the contrib tracer's SpanStarter.
func (r *runSpans) startSpan(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) trace.Span {
	if r.pending != nil {
		ctx = context.WithValue(ctx, fixedIDsKey{}, *r.pending)
	}
	_, span := t.Start(ctx, name, opts...)
	return span
}

// replaySafeTracer wraps the contrib tracer: workflow spans get their
// run's fixed ids and are finished only when the workflow returned.
type replaySafeTracer struct {
	interceptor.Tracer
	runs *runSpans
}

// runSpan is a workflow span; its Finish exports it only when the workflow
// function returned on this worker.
type runSpan struct {
	interceptor.TracerSpan
	runs  *runSpans
	runID string
}

func (s *runSpan) Finish(opts *interceptor.TracerFinishSpanOptions) {
	if _, ok := s.runs.returned.LoadAndDelete(s.runID); ok {
		s.TracerSpan.Finish(opts)
	}
}

func unwrap[T any](v T) T {
	if s, ok := any(v).(*runSpan); ok {
		return any(s.TracerSpan).(T)
	}
	return v
}

func (t *replaySafeTracer) StartSpan(opts *interceptor.TracerStartSpanOptions) (interceptor.TracerSpan, error) {
	o := *opts
	if o.Parent != nil {
		o.Parent = unwrap(o.Parent)
	}
	runID := o.Tags[runIDTag]
	if o.Operation != operationRunWorkflow || runID == "" {
		t.runs.mu.Lock()
		defer t.runs.mu.Unlock()
		return t.Tracer.StartSpan(&o)
	}
	ids := runIDs(runID)
	t.runs.mu.Lock()
	t.runs.pending = &ids
	span, err := t.Tracer.StartSpan(&o)
	t.runs.pending = nil
	t.runs.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &runSpan{TracerSpan: span, runs: t.runs, runID: runID}, nil
}

func (t *replaySafeTracer) MarshalSpan(span interceptor.TracerSpan) (map[string]string, error) {
	return t.Tracer.MarshalSpan(unwrap(span))
}

func (t *replaySafeTracer) ContextWithSpan(ctx context.Context, span interceptor.TracerSpan) context.Context {
	return t.Tracer.ContextWithSpan(ctx, unwrap(span))
}

func (t *replaySafeTracer) GetLogger(logger log.Logger, ref interceptor.TracerSpanRef) log.Logger {
	return t.Tracer.GetLogger(logger, unwrap(ref))
}

// returnMarker records that a workflow function returned (rather than
// being torn down), just before the tracing interceptor finishes its span.
type returnMarker struct {
	interceptor.WorkerInterceptorBase
	runs *runSpans
}

func (m *returnMarker) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &returnMarkerInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, runs: m.runs}
}

type returnMarkerInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	runs *runSpans
}

func (m *returnMarkerInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	ret, err := m.Next.ExecuteWorkflow(ctx, in)
	// Only the live return: a query on a closed run replays its whole
	// history and returns again, and that copy must not be exported.
	if !workflow.IsReplaying(ctx) {
		m.runs.returned.Store(workflow.GetInfo(ctx).WorkflowExecution.RunID, struct{}{})
	}
	return ret, err
}

// idGenerator is the SDK's random ids, except for a span started with
// fixed ids in its context (a workflow span).
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if ids, ok := ctx.Value(fixedIDsKey{}).(fixedIDs); ok {
		return ids.traceID, ids.spanID
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if ids, ok := ctx.Value(fixedIDsKey{}).(fixedIDs); ok {
		return ids.spanID
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
