// Package traces turns the standard OTEL_* configuration into a tracer
// provider exporting over OTLP (HTTP/protobuf or gRPC) and the Temporal
// SDK's OpenTelemetry tracing interceptor, for the worker and the starter.
// One trace runs from the starter's span through the workflow and its
// activities to every round's own spans (internal/tracing).
package traces

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// ShutdownTimeout bounds the final flush at exit.
const ShutdownTimeout = 10 * time.Second

// Provider is one binary's tracing: the SDK provider and what plugs it
// into Temporal and the rounds.
type Provider struct {
	tp      *sdktrace.TracerProvider
	capture bool
	runs    *runSpans
}

// Start builds the exporter cfg names and a provider with a batch span
// processor (the SDK's default schedule delay of 5 s, or
// OTEL_BSP_SCHEDULE_DELAY), so a span reaches the collector within seconds
// of ending. It returns nil when tracing is off.
func Start(ctx context.Context, cfg config.Tracing) (*Provider, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch cfg.Protocol {
	case config.ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
	default:
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	}
	if err != nil {
		return nil, fmt.Errorf("trace exporter for %s: %w", cfg.Endpoint, err)
	}
	res, err := Resource(cfg)
	if err != nil {
		return nil, err
	}
	return New(sdktrace.NewBatchSpanProcessor(exp), res, cfg.CaptureContent), nil
}

// Resource is the binary's resource: the SDK's defaults, then
// OTEL_RESOURCE_ATTRIBUTES, then the service name.
func Resource(cfg config.Tracing) (*resource.Resource, error) {
	given := cfg.Attributes()
	attrs := make([]attribute.KeyValue, 0, len(given)+1)
	for k, v := range given {
		attrs = append(attrs, attribute.String(k, v))
	}
	attrs = append(attrs, attribute.String("service.name", cfg.ServiceName))
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return res, nil
}

// New is a provider around processor (tests hand in the SDK's in-memory
// exporter through a syncer).
func New(processor sdktrace.SpanProcessor, res *resource.Resource, captureContent bool) *Provider {
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(processor),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(idGenerator{}),
	)
	return &Provider{tp: tp, capture: captureContent, runs: newRunSpans()}
}

// Tracer is the tracer of Ralph's own spans (nil provider: none).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tp.Tracer(tracing.InstrumentationName)
}

// Options are what the rounds trace with.
func (p *Provider) Options() tracing.Options {
	if p == nil {
		return tracing.Options{}
	}
	return tracing.Options{Tracer: p.Tracer(), CaptureContent: p.capture}
}

// ClientInterceptor is the Temporal SDK's OpenTelemetry tracing interceptor
// on this provider, with the workflow span made replay-safe (runSpans).
// Query tracing is off: the starter's progress polls the status query
// twice a second, which would bury each round under query spans.
func (p *Provider) ClientInterceptor() (interceptor.ClientInterceptor, error) {
	inner, err := newInner(p)
	if err != nil {
		return nil, err
	}
	return interceptor.NewTracingInterceptor(&replaySafeTracer{Tracer: inner, runs: p.runs}), nil
}

// newInner is the SDK's OpenTelemetry tracer on p.
func newInner(p *Provider) (interceptor.Tracer, error) {
	return temporalotel.NewTracer(temporalotel.TracerOptions{
		Tracer:              p.tp.Tracer("temporal-sdk-go"),
		DisableQueryTracing: true,
		SpanStarter:         p.runs.startSpan,
	})
}

// WorkerInterceptor goes in worker.Options.Interceptors (inside the
// client's tracing interceptor): it tells the workflow span whether the
// workflow function returned, or its coroutine was torn down (eviction,
// worker shutdown), in which case the span is not exported.
func (p *Provider) WorkerInterceptor() interceptor.WorkerInterceptor {
	return &returnMarker{runs: p.runs}
}

// Shutdown flushes every ended span and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ShutdownTimeout)
	defer cancel()
	return errors.Join(p.tp.ForceFlush(ctx), p.tp.Shutdown(ctx))
}
