package workerapp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/workflows"
)

func TestConfigIsAcceptedByActivities(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--model", "m"},
		{"--model", "m", "--heartbeat-timeout-seconds", "1", "--command-timeout-seconds", "5", "--max-command-timeout-seconds", "50"},
	} {
		args = append(args, "--workspace-root", filepath.Join(dir, "ws"), "--session-dir", filepath.Join(dir, "sessions"))
		cfg, err := config.LoadWorker(args, config.MapEnv{}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := activities.New(cfg.Activities); err != nil {
			t.Errorf("activities.New rejects the worker configuration from %q: %v", args, err)
		}
	}
}

func TestOptions(t *testing.T) {
	cfg := config.DefaultWorker()
	cfg.ConcurrentRounds = 3
	o := Options(cfg)
	if o.MaxConcurrentActivityExecutionSize != 3 || o.MaxHeartbeatThrottleInterval != time.Second ||
		o.DefaultHeartbeatThrottleInterval != time.Second || o.WorkerStopTimeout != config.DefaultStopTimeout ||
		o.StickyScheduleToStartTimeout != 2*time.Second {
		t.Errorf("options = %+v", o)
	}
}

func TestMainExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	if code := Main([]string{"--max-rounds=0"}, config.MapEnv{}, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "--max-rounds") {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	dir := t.TempDir()
	env := config.MapEnv{"RALPH_WORKSPACE_ROOT": filepath.Join(dir, "ws"), "RALPH_SESSION_DIR": filepath.Join(dir, "s"), "OPENAI_API_KEY": "sk-secret-value"}
	if code := Main(nil, env, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "RALPH_MODEL is not set") {
		t.Errorf("no model: exit %d, stderr %q", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "sk-secret-value") {
		t.Error("the API key was logged")
	}
	if code := Main([]string{"--help"}, config.MapEnv{}, io.Discard); code != ExitOK {
		t.Errorf("--help: exit %d", code)
	}
	stderr.Reset()
	demo := config.MapEnv{"RALPH_WORKSPACE_ROOT": filepath.Join(dir, "ws"), "RALPH_SESSION_DIR": filepath.Join(dir, "s"),
		"RALPH_DEMO": "1", "RALPH_MODEL": "gpt-4.1", "OPENAI_API_KEY": "sk-secret-value"}
	if code := Main(nil, demo, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "RALPH_DEMO=1") ||
		!strings.Contains(stderr.String(), "RALPH_MODEL") || strings.Contains(stderr.String(), "sk-secret-value") {
		t.Errorf("demo with a real model: exit %d, stderr %q", code, stderr.String())
	}
}

// TestDemoWorkerRunsARalphLoop runs the real worker (demo mode: the scripted
// model server) against a dev server and drives one run to completion.
func TestDemoWorkerRunsARalphLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	dir := t.TempDir()
	env := config.MapEnv{"TEMPORAL_ADDRESS": srv.Address, "TEMPORAL_CONFIG_FILE": filepath.Join(dir, "none.toml"), "OPENAI_API_KEY": "sk-secret-value"}
	cfg, err := config.LoadWorker([]string{"--demo", "--task-queue", "demo-q",
		"--workspace-root", filepath.Join(dir, "ws"), "--session-dir", filepath.Join(dir, "sessions")}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, cfg, env, logger) }()

	c, err := srv.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// WaitPolling finds this very process among the pollers, and refuses a
	// pid that is not polling once its process is gone.
	if err := temporalserver.WaitPolling(ctx, c, "demo-q", os.Getpid(), nil); err != nil {
		t.Fatalf("WaitPolling(own pid): %v", err)
	}
	gone := make(chan struct{})
	close(gone)
	if err := temporalserver.WaitPolling(ctx, c, "demo-q", os.Getpid()+100000, gone); err == nil || !strings.Contains(err.Error(), "exited before polling") {
		t.Fatalf("WaitPolling(other pid, exited) = %v", err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "demo-run", TaskQueue: "demo-q"}, workflows.WorkflowName,
		workflows.Input{Objective: "write greet.sh with a passing test", Workspace: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("run failed: %v\nworker log:\n%s", err, logs.String())
	}
	if res.Status != "complete" || res.RoundsStarted != 2 {
		t.Errorf("result = %+v", res)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	for _, want := range []string{"worker is polling", "worker stopped", "apiKeySet=true"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(logs.String(), "sk-secret-value") || strings.Contains(logs.String(), "demo-no-key") {
		t.Error("an API key was logged")
	}
}
