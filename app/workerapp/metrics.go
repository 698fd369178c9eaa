package workerapp

import (
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/app/metrics"
)

// serveMetrics serves Prometheus /metrics on addr and routes the client's
// (and so the worker's and the activities') metrics to it.
func serveMetrics(opts *client.Options, addr string, logger *slog.Logger) (func(), error) {
	m, err := metrics.New(logger)
	if err != nil {
		return nil, err
	}
	bound, stop, err := m.Serve(addr)
	if err != nil {
		return nil, err
	}
	opts.MetricsHandler = m.Handler()
	logger.Info("serving Prometheus metrics", "address", bound, "path", metrics.Path)
	return func() {
		if err := stop(); err != nil {
			logger.Warn("metrics server stopped with an error", "error", err)
		}
	}, nil
}
