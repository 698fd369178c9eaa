// Package workerapp is the Ralph worker binary: configuration from env and
// flags, a Temporal client from the standard TEMPORAL_* environment, the
// Ralph workflow and its activities registered under their stable names, and
// a graceful drain on SIGINT/SIGTERM. worker/main.go is a thin wrapper.
package workerapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/searchattrs"
	"github.com/ralph-temporal/ralph/app/traces"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// Exit codes of the worker binary.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// Demo-mode model settings: the scripted server ignores both, but the
// OpenAI client needs a model name and sends a bearer token.
const (
	DemoModel  = "ralph-demo"
	demoAPIKey = "demo-no-key"
)

// HeartbeatThrottle is the worker's MaxHeartbeatThrottleInterval. A round
// paces its own heartbeats (every second, and after each model answer) and
// sends them through the worker's client; the SDK's RecordHeartbeat carries
// the ones whose answer was a cancel, pause or reset, so that the SDK acts
// on it. The SDK must not hold those back: its default throttle of 0.8 × the
// heartbeat timeout would delay every cancel.
const HeartbeatThrottle = activities.UsageHeartbeatDelay

// StickyScheduleToStart bounds how long a workflow task waits on the sticky
// queue of the worker that ran the run's last workflow task. After that
// worker is killed, the next task (a round finished by another worker) falls
// back to the shared queue this much later; the SDK default of 5 s showed in
// every crash-recovery sample (docs/benchmarks.md).
const StickyScheduleToStart = 2 * time.Second

// Main runs the worker until SIGINT/SIGTERM and returns the exit code.
func Main(args []string, env config.Env, stderr io.Writer) int {
	cfg, err := config.LoadWorker(args, env, stderr)
	if errors.Is(err, config.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return ExitUsage
	}
	logger := NewLogger(stderr, cfg)
	slog.SetDefault(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, env, logger); err != nil {
		logger.Error("worker stopped with an error", "error", err)
		var usage *UsageError
		if errors.As(err, &usage) {
			return ExitUsage
		}
		return ExitFailed
	}
	return ExitOK
}

// NewLogger builds the slog logger the configuration asks for.
func NewLogger(w io.Writer, cfg config.Worker) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// UsageError is a configuration problem found after flag parsing (for
// example a missing model name); the binary exits with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Run serves until ctx is done, then drains: running rounds get
// cfg.StopTimeout to finish before their contexts are cancelled.
func Run(ctx context.Context, cfg config.Worker, env config.Env, logger *slog.Logger) error {
	s, err := Start(ctx, cfg, env, logger, Hooks{})
	if err != nil {
		return err
	}
	return s.Serve(ctx, cfg, logger)
}

// Serve keeps a started worker polling until ctx is done, then drains it;
// a fatal worker error ends it sooner.
func (s *Started) Serve(ctx context.Context, cfg config.Worker, logger *slog.Logger) error {
	defer s.Stop()
	select {
	case <-ctx.Done():
		logger.Info("stopping: draining running rounds", "stopTimeout", cfg.StopTimeout)
		s.Stop()
	case err := <-s.fatal:
		return fmt.Errorf("worker on task queue %q: %w", cfg.TaskQueue, err)
	}
	logger.Info("worker stopped")
	return nil
}

// Started is a polling Ralph worker. Client is the worker's own client: its
// data converter (so it reads encrypted payloads) and its tracing interceptor.
type Started struct {
	Client  client.Client
	Version *worker.WorkerDeploymentVersion

	fatal   chan error
	ready   *readiness
	cleanup []func() // in the order they must run on Stop
	once    sync.Once
}

// Stop drains the running rounds (cfg.StopTimeout), then closes the client
// and flushes the traces.
func (s *Started) Stop() {
	s.once.Do(func() {
		for _, f := range s.cleanup {
			f()
		}
	})
}

// later registers f to run on Stop before everything registered earlier.
func (s *Started) later(f func()) { s.cleanup = append([]func(){f}, s.cleanup...) }

// Hooks let a benchmark change what the worker binary never changes.
type Hooks struct {
	Options  func(*worker.Options) // adjusts the worker options last
	Register func(worker.Registry) // registers more on the same worker
}

// Start wires the worker the configuration asks for, exactly as the worker
// binary runs it, and starts it polling. On error, what it opened is
// released. Each step below is one part of the wiring, in the order the
// worker needs them.
func Start(ctx context.Context, cfg config.Worker, env config.Env, logger *slog.Logger, hooks Hooks) (_ *Started, err error) {
	s := &Started{fatal: make(chan error, 1), ready: newReadiness()}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if cfg.HealthAddress != "" {
		// First, so that liveness answers while the worker waits for its
		// server, and last to stop, so that it answers during the drain.
		stopHealth, err := serveHealth(cfg.HealthAddress, s.ready, logger)
		if err != nil {
			return nil, &UsageError{Err: err}
		}
		s.later(stopHealth)
	}
	if cfg.Demo {
		if err := s.startDemo(&cfg, logger); err != nil {
			return nil, err
		}
	}
	if err := prepareHost(&cfg, logger); err != nil {
		return nil, err
	}
	tp, err := s.startTracing(ctx, cfg.Tracing, logger)
	if err != nil {
		return nil, err
	}
	cfg.Activities.Agent.Tracing = tp.Options()
	acts, err := activities.New(cfg.Activities)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("activities configuration: %w", err)}
	}
	logSandbox(logger, cfg.Activities.Sandbox, acts.Sandbox())
	logGitBound(logger, acts.Git())
	agentAttrs, err := checkAgents(ctx, cfg.Activities.Agents)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	s.ready.setSandbox(acts.Sandbox())
	w, err := s.newWorkerOptions(cfg, env, tp, logger)
	if err != nil {
		return nil, err
	}
	s.Version = w.version
	if err := s.connect(ctx, cfg, env, w.client, agentAttrs, logger); err != nil {
		return nil, err
	}
	if err := s.startPolling(ctx, cfg, w, acts, hooks, logger); err != nil {
		return nil, err
	}
	return s, nil
}

// startDemo runs the scripted model server and points the model
// configuration at it.
func (s *Started) startDemo(cfg *config.Worker, logger *slog.Logger) error {
	if cfg.Activities.Agent.Model != "" {
		return &UsageError{Err: fmt.Errorf("%s=1 and %s=%q are both set: demo mode would silently replace that model with the scripted one; unset %s for a demo, or %s for a real run",
			config.EnvDemo, config.EnvModel, cfg.Activities.Agent.Model, config.EnvModel, config.EnvDemo)}
	}
	if cfg.Activities.Agent.APIKey != "" {
		logger.Warn("demo mode: " + config.EnvAPIKey + " is set and ignored; rounds talk to the scripted model")
	}
	srv, err := fakeopenai.Listen("127.0.0.1:0", fakeopenai.DemoScript())
	if err != nil {
		return fmt.Errorf("demo mode: start the scripted model server: %w", err)
	}
	s.later(srv.Close)
	cfg.Activities.Agent.BaseURL = srv.BaseURL()
	cfg.Activities.Agent.Model = DemoModel
	cfg.Activities.Agent.APIKey = demoAPIKey
	logger.Warn("demo mode: every round talks to the scripted local model server, not a real model",
		"baseURL", srv.BaseURL(), "model", DemoModel)
	return nil
}

// prepareHost checks the model settings, says the configuration's warnings,
// makes the worker non-dumpable, creates its directories and hides the
// payload key from commands.
func prepareHost(cfg *config.Worker, logger *slog.Logger) error {
	if err := cfg.CheckModel(); err != nil {
		return &UsageError{Err: err}
	}
	for _, w := range cfg.Warnings {
		logger.Warn(w)
	}
	if err := makeNonDumpable(); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Activities.WorkspaceRoot, 0o755); err != nil {
		return fmt.Errorf("create the workspace root (RALPH_WORKSPACE_ROOT): %w", err)
	}
	if err := os.MkdirAll(cfg.Activities.SessionDir, 0o700); err != nil {
		return fmt.Errorf("create the session directory (RALPH_SESSION_DIR): %w", err)
	}
	if cfg.Connection.EncryptionKeyFile != "" {
		// The payload key is a worker secret like the TLS files; its whole
		// directory goes (copies and rotated keys lie beside it).
		cfg.Activities.Sandbox.Hide = append(slices.Clip(cfg.Activities.Sandbox.Hide),
			cfg.Connection.EncryptionKeyFile, filepath.Dir(cfg.Connection.EncryptionKeyFile))
	}
	return nil
}

// startTracing starts the trace exporter the OTEL_* settings ask for (nil
// when tracing is off) and flushes it on Stop.
func (s *Started) startTracing(ctx context.Context, cfg config.Tracing, logger *slog.Logger) (*traces.Provider, error) {
	tp, err := traces.Start(ctx, cfg)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	if tp == nil {
		return nil, nil
	}
	// Registered before the client's Close, so it runs after the worker
	// has drained: the last rounds' spans are flushed at shutdown.
	s.later(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			logger.Warn("flushing the traces at shutdown failed", "error", err)
		}
	})
	logger.Info("tracing on", "endpoint", cfg.Endpoint, "protocol", cfg.Protocol,
		"serviceName", cfg.ServiceName, "captureMessageContent", cfg.CaptureContent)
	return tp, nil
}

// workerSetup is what the client and the worker are built from.
type workerSetup struct {
	client  client.Options
	worker  worker.Options
	version *worker.WorkerDeploymentVersion
}

// newWorkerOptions resolves the client and worker options: the connection,
// the deployment version, the tracing interceptors and the metrics server.
func (s *Started) newWorkerOptions(cfg config.Worker, env config.Env, tp *traces.Provider, logger *slog.Logger) (workerSetup, error) {
	opts, err := config.ClientOptions(env, cfg.Connection)
	if err != nil {
		return workerSetup{}, &UsageError{Err: err}
	}
	opts.Logger = tlog.NewStructuredLogger(logger)
	version, err := DeploymentVersion(cfg.Versioning)
	if err != nil {
		return workerSetup{}, &UsageError{Err: err}
	}
	wopts := Options(cfg, version)
	if tp != nil {
		ti, err := tp.ClientInterceptor()
		if err != nil {
			return workerSetup{}, err
		}
		opts.Interceptors = append(opts.Interceptors, ti)
		wopts.Interceptors = append(wopts.Interceptors, tp.WorkerInterceptor())
	}
	if cfg.MetricsAddress != "" {
		stopMetrics, err := serveMetrics(&opts, cfg.MetricsAddress, logger)
		if err != nil {
			return workerSetup{}, &UsageError{Err: err}
		}
		s.later(stopMetrics)
	}
	return workerSetup{client: opts, worker: wopts, version: version}, nil
}

// connect dials the Temporal frontend (retrying while it is unreachable)
// and registers the search attributes when the worker upserts them.
func (s *Started) connect(ctx context.Context, cfg config.Worker, env config.Env, opts client.Options, agentAttrs []any, logger *slog.Logger) error {
	logger.Info("starting Ralph worker", append([]any{"version", VersionString(s.Version), "address", opts.HostPort, "namespace", opts.Namespace,
		"encryptionKeyFile", cfg.Connection.EncryptionKeyFile, "metricsAddress", cfg.MetricsAddress}, append(agentAttrs, cfg.LogAttrs()...)...)...)
	c, err := dialWithRetry(ctx, opts, env, cfg.ConnectTimeout, logger)
	if err != nil {
		return err
	}
	s.Client = c
	s.later(c.Close)
	s.ready.setFrontend(func(ctx context.Context) error {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		return err
	})
	if cfg.Activities.Limits.SearchAttributes {
		if err := searchattrs.Ensure(ctx, c, opts.Namespace, logger); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// startPolling builds the worker on the task queue, registers the workflow
// and the activities, starts polling and promotes the worker's version as
// RALPH_SET_CURRENT says.
func (s *Started) startPolling(ctx context.Context, cfg config.Worker, setup workerSetup, acts *activities.Activities, hooks Hooks, logger *slog.Logger) error {
	wopts := setup.worker
	wopts.OnFatalError = func(err error) {
		select {
		case s.fatal <- err:
		default:
		}
	}
	if hooks.Options != nil {
		hooks.Options(&wopts)
	}
	w := worker.New(s.Client, cfg.TaskQueue, wopts)
	acts.UseClient(s.Client) // a campaign's CheckTaskLoops reads its loops through it
	Register(w, acts, cfg.Versioning.Behavior)
	if hooks.Register != nil {
		hooks.Register(w)
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("worker on task queue %q: %w", cfg.TaskQueue, err)
	}
	s.later(w.Stop)
	// Not ready from the moment the drain begins.
	s.later(func() { s.ready.setPolling(false) })
	if v := setup.version; v != nil {
		if err := promote(ctx, s.Client, *v, cfg.Versioning.SetCurrent, logger); err != nil {
			return err
		}
	}
	s.ready.setPolling(true)
	logger.Info("worker is polling", "taskQueue", cfg.TaskQueue, "namespace", setup.client.Namespace, "address", setup.client.HostPort,
		"version", VersionString(setup.version))
	return nil
}

// Options are the worker options a Ralph worker runs with; version nil
// means an unversioned worker.
func Options(cfg config.Worker, version *worker.WorkerDeploymentVersion) worker.Options {
	opts := worker.Options{
		MaxConcurrentActivityExecutionSize: cfg.ConcurrentRounds,
		MaxHeartbeatThrottleInterval:       HeartbeatThrottle,
		DefaultHeartbeatThrottleInterval:   HeartbeatThrottle,
		StickyScheduleToStartTimeout:       StickyScheduleToStart,
		WorkerStopTimeout:                  cfg.StopTimeout,
	}
	if version != nil {
		opts.DeploymentOptions = worker.DeploymentOptions{UseVersioning: true, Version: *version}
	}
	return opts
}

// Register puts the workflow and the activities on w under their stable
// names; the activities register themselves (one path for every worker).
// behavior is RALPH_VERSIONING_BEHAVIOR (unversioned workers ignore it).
func Register(w worker.Registry, acts *activities.Activities, behavior string) {
	w.RegisterWorkflowWithOptions(workflows.Ralph, workflow.RegisterOptions{Name: workflows.WorkflowName,
		VersioningBehavior: WorkflowBehavior(behavior)})
	w.RegisterWorkflowWithOptions(campaign.Campaign, workflow.RegisterOptions{Name: campaign.CampaignWorkflowName,
		VersioningBehavior: WorkflowBehavior(behavior)})
	w.RegisterWorkflowWithOptions(workflows.RalphNotify, workflow.RegisterOptions{Name: workflows.NotifyWorkflowName,
		VersioningBehavior: WorkflowBehavior(behavior)})
	acts.Register(w)
}

// WorkflowBehavior is the SDK's versioning behavior for a
// RALPH_VERSIONING_BEHAVIOR value: auto-upgrade moves a run to the current
// build at its next workflow task (every workflow change is guarded by
// workflow.GetVersion); pinned keeps each run's tasks on the build that
// started it.
func WorkflowBehavior(behavior string) workflow.VersioningBehavior {
	if behavior == config.BehaviorPinned {
		return workflow.VersioningBehaviorPinned
	}
	return workflow.VersioningBehaviorAutoUpgrade
}

// dialWithRetry keeps trying an unreachable server for up to timeout, so a
// worker started next to its server (compose, scripts) waits for it.
func dialWithRetry(ctx context.Context, opts client.Options, env config.Env, timeout time.Duration, logger *slog.Logger) (client.Client, error) {
	deadline := time.Now().Add(timeout)
	delay := 500 * time.Millisecond
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := config.Dial(attemptCtx, opts, env)
		cancel()
		if err == nil {
			return c, nil
		}
		var unreachable *config.UnreachableError
		if !errors.As(err, &unreachable) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		}
		if time.Now().Add(delay).After(deadline) {
			return nil, fmt.Errorf("%w (gave up after %s; RALPH_CONNECT_TIMEOUT_SECONDS)", err, timeout)
		}
		logger.Warn("waiting for the Temporal server", "address", opts.HostPort, "error", err.Error(), "retryIn", delay)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (interrupted)", err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}
