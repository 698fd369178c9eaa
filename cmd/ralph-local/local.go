package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/starterapp"
	"github.com/ralph-temporal/ralph/app/workerapp"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
)

// Exit codes of ralph-local besides the starter's own.
const (
	exitFailed    = starterapp.ExitFailed
	exitUsage     = starterapp.ExitUsage
	exitCancelled = starterapp.ExitCancelled
)

// local is one invocation: where it runs, its environment and its output.
type local struct {
	dir      string
	environ  []string
	stdout   io.Writer
	stderr   io.Writer
	signals  <-chan os.Signal
	serverUp func(pid int) // called with the started dev server's pid (tests)
}

func (l *local) say(format string, args ...any) {
	fmt.Fprintf(l.stderr, "ralph-local: "+format+"\n", args...)
}

func (l *local) main(args []string) int {
	env := envMap(l.environ)
	s, err := parseSettings(args, env)
	if err != nil {
		l.say("error: %v", err)
		return exitUsage
	}
	state := filepath.Join(l.dir, stateDir)
	logs := filepath.Join(state, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		l.say("error: %v", err)
		return exitFailed
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	runEnv := localEnv(env, addr, state)
	if s.campaign || s.plan {
		campaignEnv(runEnv, state)
	}

	// A Ctrl-C before the run starts ends the setup; afterwards it goes to
	// the starter, which cancels the run and waits for it to close.
	setupCtx, cancelSetup := context.WithCancel(context.Background())
	defer cancelSetup()
	setupDone := make(chan struct{})
	go func() {
		select {
		case <-l.signals:
			cancelSetup()
		case <-setupDone:
		}
	}()

	stopServer, err := l.server(setupCtx, s, addr, state, logs)
	if err != nil {
		l.say("error: %v", err)
		return setupExit(setupCtx)
	}
	defer stopServer()

	w, err := l.startWorker(setupCtx, s, addr, runEnv, logs)
	if err != nil {
		l.say("error: %v", err)
		return setupExit(setupCtx)
	}
	defer w.stop(l)
	close(setupDone)
	if setupCtx.Err() != nil {
		return exitCancelled
	}
	return l.runStarter(s, addr, runEnv, w)
}

func setupExit(ctx context.Context) int {
	if ctx.Err() != nil {
		return exitCancelled
	}
	return exitFailed
}

// envMap is environ as a map; later entries win, as in exec.
func envMap(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// localEnv is the worker's and the starter's environment: the caller's
// without any TEMPORAL_* client setting (cloud address, key, TLS,
// profile), pointed at the local server, with the state under .ralph.
func localEnv(env map[string]string, addr, state string) config.MapEnv {
	out := config.MapEnv{}
	for k, v := range env {
		if !strings.HasPrefix(k, "TEMPORAL_") {
			out[k] = v
		}
	}
	out["TEMPORAL_ADDRESS"] = addr
	out["TEMPORAL_NAMESPACE"] = client.DefaultNamespace
	if out[envGit] == "" {
		out[envGit] = defaultGitMode
	}
	// No profile file of the user's either.
	out["TEMPORAL_CONFIG_FILE"] = filepath.Join(state, "no-temporal-profile.toml")
	for key, sub := range map[string]string{"RALPH_WORKSPACE_ROOT": "workspaces", "RALPH_SESSION_DIR": "sessions"} {
		if out[key] == "" {
			out[key] = filepath.Join(state, sub)
		}
	}
	// The dev server's database (every run's history) and the logs are
	// invisible to commands; the workspace inside is mounted back.
	hide := state
	if out["RALPH_SANDBOX_HIDE"] != "" {
		hide = out["RALPH_SANDBOX_HIDE"] + ":" + state
	}
	out["RALPH_SANDBOX_HIDE"] = hide
	return out
}

// server reuses a Temporal server already answering at addr (and leaves it
// running), or starts the dev server; the returned func stops what was
// started.
func (l *local) server(ctx context.Context, s settings, addr, state, logs string) (func(), error) {
	if !temporalserver.PortFree(addr) {
		if err := temporalAnswers(ctx, addr); err != nil {
			return nil, fmt.Errorf("port %d is in use, but no Temporal server answers there (%v); free it or pick another port with %s", s.port, err, EnvTemporalPort)
		}
		l.say("reusing the Temporal server already answering at %s (not started here, so it is left running)", addr)
		return func() {}, nil
	}
	if !temporalserver.PortFree(net.JoinHostPort("127.0.0.1", strconv.Itoa(s.uiPort))) {
		return nil, fmt.Errorf("the UI port %d is in use; free it or pick another with %s", s.uiPort, EnvUIPort)
	}
	logPath := filepath.Join(logs, "temporal.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the server log: %w", err)
	}
	if !temporalserver.CLIInstalled() {
		l.say("installing the Temporal CLI %s from the Go module proxy (about 5 minutes the first time)", temporalserver.CLIVersion)
	}
	l.say("starting the Temporal dev server at %s (UI http://127.0.0.1:%d, state in %s, log %s)", addr, s.uiPort, rel(l.dir, state), rel(l.dir, logPath))
	ctx, cancel := context.WithTimeout(ctx, s.serverTimeout+15*time.Minute) // the install may come first
	defer cancel()
	dev, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{
		Port: s.port, UIPort: s.uiPort, DBFile: filepath.Join(state, "temporal.db"),
		Output: logf, StartTimeout: s.serverTimeout,
	})
	if err != nil {
		logf.Close()
		return nil, err
	}
	if l.serverUp != nil {
		l.serverUp(dev.PID())
	}
	return func() {
		l.say("stopping the Temporal dev server")
		if err := dev.Stop(); err != nil {
			l.say("warning: %v", err)
		}
		logf.Close()
	}, nil
}

func temporalAnswers(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: temporalserver.QuietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// worker is the in-process Ralph worker.
type worker struct {
	cfg    config.Worker
	stopFn context.CancelFunc
	exited chan struct{}
	err    error // Start's or Serve's result, set before exited is closed
	logf   *os.File
}

func (l *local) startWorker(ctx context.Context, s settings, addr string, env config.MapEnv, logs string) (*worker, error) {
	args := []string{"--address", addr, "--namespace", client.DefaultNamespace, "--demo=" + strconv.FormatBool(s.demo)}
	if _, set := env["RALPH_SET_CURRENT"]; !set {
		// The local dev server's database remembers earlier builds: a rebuilt
		// worker must still take the new runs.
		args = append(args, "--set-current", config.SetCurrentAlways)
	}
	cfg, err := config.LoadWorker(args, env, l.stderr)
	if err != nil {
		return nil, fmt.Errorf("worker settings: %w", err)
	}
	if s.demo {
		l.say("model mode: demo, because %s: rounds talk to the worker's scripted local OpenAI-compatible server (no key, no network; it builds greet.sh whatever the objective, or plays the campaign demo's tasks and the planning demo's planners). For a real model set OPENAI_API_KEY and RALPH_MODEL (and OPENAI_BASE_URL for a non-OpenAI endpoint).", s.demoReason)
	} else {
		l.say("model mode: real: rounds call model %q at %s", cfg.Activities.Agent.Model, cfg.Activities.Agent.BaseURL)
	}
	logPath := filepath.Join(logs, "worker.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the worker log: %w", err)
	}
	// Everything goes to the log; errors (an unreachable model, a rejected
	// key) show in the terminal too, so a stuck run says why.
	logger := slog.New(slog.NewMultiHandler(
		workerapp.NewLogger(logf, cfg).Handler(),
		slog.NewTextHandler(prefixed{l.stderr, "ralph-local: worker error: "}, &slog.HandlerOptions{Level: slog.LevelError}),
	))
	runCtx, stop := context.WithCancel(context.Background())
	w := &worker{cfg: cfg, stopFn: stop, exited: make(chan struct{}), logf: logf}
	ready := make(chan struct{})
	go func() {
		defer close(w.exited)
		// Start returns once the worker polls and its version (when
		// versioned) is current: the run the starter starts next is taken.
		started, err := workerapp.Start(runCtx, cfg, env, logger, workerapp.Hooks{})
		if w.err = err; err == nil {
			close(ready)
			w.err = started.Serve(runCtx, cfg, logger)
		}
	}()
	l.say("starting the worker (log %s)", rel(l.dir, logPath))
	select {
	case <-ready:
	case <-w.exited:
		w.stop(l)
		return nil, fmt.Errorf("the worker stopped: %w (log %s)", w.err, rel(l.dir, logPath))
	case <-time.After(s.workerTimeout):
		w.stop(l)
		return nil, fmt.Errorf("the worker is not polling task queue %s after %s (%s; log %s)", cfg.TaskQueue, s.workerTimeout, EnvWorkerTimeout, rel(l.dir, logPath))
	case <-ctx.Done():
		w.stop(l)
		return nil, ctx.Err()
	}
	l.say("worker is polling task queue %s", cfg.TaskQueue)
	return w, nil
}

// stop drains the worker (running rounds get its stop timeout) and waits.
func (w *worker) stop(l *local) {
	w.stopFn()
	select {
	case <-w.exited:
	case <-time.After(w.cfg.StopTimeout + 30*time.Second):
		l.say("warning: the worker did not stop within %s", w.cfg.StopTimeout+30*time.Second)
	}
	w.logf.Close()
}

// runStarter runs `starter run` (or the campaign demo) in the foreground.
func (l *local) runStarter(s settings, addr string, env config.MapEnv, w *worker) int {
	if s.campaign {
		return l.runCampaign(s, addr, env, w)
	}
	if s.plan {
		return l.runPlan(s, addr, env, w)
	}
	ws := filepath.Join(w.cfg.Activities.WorkspaceRoot, s.workspace)
	l.say("workspace: %s (watch files appear: ls -la %s)", ws, ws)
	l.say("Temporal UI: http://127.0.0.1:%d/namespaces/default/workflows/ralph-%s", s.uiPort, s.workspace)
	l.say("objective: %s", s.objective)
	args := []string{"run", "--address", addr, "--namespace", client.DefaultNamespace, "--workspace", s.workspace, "--objective", s.objective}
	if s.verify != "" {
		l.say("verify command: %s (a complete report counts only when it passes)", s.verify)
		args = append(args, "--verify", s.verify)
	}
	gitMode := w.cfg.Activities.Git.Mode
	if w.cfg.Activities.Git.Enabled() {
		l.say("git checkpoints: %s=%s (one commit per round in the workspace)", envGit, gitMode)
	}
	rc := l.starter(env, w, args)
	if rc != exitUsage {
		l.listWorkspace(ws)
		if gitMode == defaultGitMode {
			l.listCommits(ws)
		}
	}
	l.say("%s", exitMeaning(rc))
	return rc
}

// starter runs the starter with args in the foreground. Signals go to it;
// a worker that dies meanwhile makes it cancel and stop waiting, since no
// one would finish the run.
func (l *local) starter(env config.MapEnv, w *worker, args []string) int {
	signals := make(chan os.Signal, 4)
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		exited := w.exited
		for {
			select {
			case sig := <-l.signals:
				signals <- sig
			case <-exited:
				exited = nil
				l.say("error: the worker stopped during the run: %v", w.err)
				signals <- os.Interrupt
				signals <- os.Interrupt
			case <-finished:
				return
			}
		}
	}()
	app := &starterapp.App{Env: env, Stdin: strings.NewReader(""), Stdout: l.stdout, Stderr: l.stderr, Signals: signals}
	return app.Main(args)
}

func exitMeaning(rc int) string {
	if rc == exitFailed || starterapp.ExitMeaning(rc) == "" {
		return fmt.Sprintf("the starter exited with %d; the worker log is in %s/logs", rc, stateDir)
	}
	return fmt.Sprintf("%s (exit %d)", starterapp.ExitMeaning(rc), rc)
}

// listWorkspace prints the workspace's files (without .git), at most listLimit.
func (l *local) listWorkspace(ws string) {
	var files []string
	err := filepath.WalkDir(ws, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, rel(ws, path))
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		l.say("the workspace %s was not created", ws)
		return
	}
	sort.Strings(files)
	l.say("files in the workspace %s:", ws)
	if len(files) == 0 {
		fmt.Fprintln(l.stderr, "    (none)")
	}
	for i, f := range files {
		if i == listLimit {
			fmt.Fprintf(l.stderr, "    ... and %d more\n", len(files)-listLimit)
			break
		}
		fmt.Fprintf(l.stderr, "    %s\n", f)
	}
}

// listCommits prints the workspace's per-round commits, newest first.
func (l *local) listCommits(ws string) {
	out, err := exec.Command("git", "-C", ws, "log", "--oneline", "-n", strconv.Itoa(listLimit)).CombinedOutput()
	if err != nil {
		l.say("no commits to show in %s: %v: %s", ws, err, bytes.TrimSpace(out))
		return
	}
	l.say("per-round commits in the workspace (git log --oneline):")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Fprintf(l.stderr, "    %s\n", line)
	}
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// prefixed writes each log record (one Write per record) with a prefix,
// leaving out a cancelled round's error: the starter already says so.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`Error="context canceled"`)) {
		return len(b), nil
	}
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
