package workerapp

import (
	"bytes"
	"context"
	"go.temporal.io/sdk/worker"
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
	o := Options(cfg, nil)
	if o.MaxConcurrentActivityExecutionSize != 3 || o.MaxHeartbeatThrottleInterval != HeartbeatThrottle || HeartbeatThrottle > time.Second ||
		o.DefaultHeartbeatThrottleInterval != HeartbeatThrottle || o.WorkerStopTimeout != config.DefaultStopTimeout ||
		o.StickyScheduleToStartTimeout != 2*time.Second || o.DeploymentOptions.UseVersioning {
		t.Errorf("options = %+v", o)
	}
	v := worker.WorkerDeploymentVersion{DeploymentName: "ralph", BuildID: "abc"}
	if o := Options(cfg, &v); !o.DeploymentOptions.UseVersioning || o.DeploymentOptions.Version != v {
		t.Errorf("versioned options = %+v", o.DeploymentOptions)
	}
}

// The default build id is the binary's; RALPH_BUILD_ID overrides it; off
// means unversioned; bad names are refused naming the setting.
func TestDeploymentVersion(t *testing.T) {
	load := func(env config.MapEnv) (config.Worker, error) {
		dir := t.TempDir()
		env["RALPH_WORKSPACE_ROOT"], env["RALPH_SESSION_DIR"] = filepath.Join(dir, "ws"), filepath.Join(dir, "s")
		return config.LoadWorker(nil, env, io.Discard)
	}
	cfg, err := load(config.MapEnv{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := DeploymentVersion(cfg.Versioning)
	if err != nil || v == nil || v.DeploymentName != "ralph" || v.BuildID == "" || cfg.Versioning.SetCurrent != config.SetCurrentIfNone {
		t.Fatalf("default version = %+v, %v (set-current %q)", v, err, cfg.Versioning.SetCurrent)
	}
	cfg, _ = load(config.MapEnv{"RALPH_BUILD_ID": "v1.2.3", "RALPH_DEPLOYMENT_NAME": "team-a"})
	if v, _ := DeploymentVersion(cfg.Versioning); VersionString(v) != "team-a.v1.2.3" {
		t.Fatalf("version = %q", VersionString(v))
	}
	cfg, _ = load(config.MapEnv{"RALPH_VERSIONING": "off"})
	if v, err := DeploymentVersion(cfg.Versioning); v != nil || err != nil {
		t.Fatalf("off: %+v, %v", v, err)
	}
	for env, want := range map[string]string{"RALPH_DEPLOYMENT_NAME=a.b": "RALPH_DEPLOYMENT_NAME", "RALPH_BUILD_ID=a b": "RALPH_BUILD_ID",
		"RALPH_VERSIONING=yes": "RALPH_VERSIONING", "RALPH_SET_CURRENT=sometimes": "RALPH_SET_CURRENT"} {
		k, val, _ := strings.Cut(env, "=")
		if _, err := load(config.MapEnv{k: val}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %s", env, err, want)
		}
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
