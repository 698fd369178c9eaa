// Package metrics exposes a worker's metrics to Prometheus: the Temporal
// SDK's own (through its OpenTelemetry metrics handler) and Ralph's, which
// the activities record through the same handler, on one /metrics endpoint.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/ralph-temporal/ralph/activities"
)

// Path is where the metrics are served.
const Path = "/metrics"

// meterName is the instrumentation scope of everything recorded through the
// SDK's handler (its metrics and Ralph's).
const meterName = "temporal-sdk-go"

// Histogram buckets in seconds: SDK latencies are milliseconds to a minute
// (long polls); a round takes seconds to an hour.
func latencyBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
}

func roundBuckets() []float64 {
	return []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
}

const readHeaderTimeout = 10 * time.Second

// Metrics owns the meter provider and the Prometheus registry behind one
// worker's /metrics.
type Metrics struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
	handler  client.MetricsHandler
}

// New builds the exporter. logger receives instrument errors, which the
// contrib handler would otherwise turn into a panic.
func New(logger *slog.Logger) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: create the Prometheus exporter: %w", err)
	}
	scope := instrumentation.Scope{Name: meterName}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(
			sdkmetric.NewView(sdkmetric.Instrument{Name: activities.MetricRoundDuration, Scope: scope},
				sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: roundBuckets()}}),
			sdkmetric.NewView(sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s", Scope: scope},
				sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: latencyBuckets()}}),
		),
	)
	h := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter:                provider.Meter(meterName),
		UseMonotonicCounters: true,
		OnError:              func(err error) { logger.Warn("metrics: instrument error", "error", err) },
	})
	return &Metrics{provider: provider, registry: reg, handler: h}, nil
}

// Handler is the client.Options.MetricsHandler of the worker's client.
func (m *Metrics) Handler() client.MetricsHandler { return m.handler }

// HTTPHandler serves the Prometheus text format.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Serve listens on addr and serves Path; it returns the bound address once
// the listener is open, and a stop function that closes the server and the
// meter provider.
func (m *Metrics) Serve(addr string) (string, func() error, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: listen on %s (RALPH_METRICS_ADDRESS): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, m.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	stop := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return errors.Join(err, m.provider.Shutdown(sctx))
	}
	return lis.Addr().String(), stop, nil
}
