// Package integration runs the real stack: a Temporal server (the dev server,
// or the PostgreSQL-backed cluster when RALPH_TEST_CLUSTER=1), the real
// worker and starter binaries as processes, real commands, and a scripted
// OpenAI-compatible model server. Nothing here is skipped in CI.
//
// Parallel tests: every test has a task queue, a worker deployment and
// workflow ids of its own (newEnv), so a test calls t.Parallel() as its first
// statement unless it restarts, kills or loads the shared server, or changes
// process-wide state (t.Setenv); those stay sequential, and Go runs them all
// before the parallel ones start. Ids, schedule ids and workspace names
// (a starter run's id is ralph-<workspace>) are unique across the package.
// docs/testing.md#real-stack-tests-in-parallel says more.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/toolcache"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
)

// testAPIKey must never appear in transcripts, logs or histories.
const testAPIKey = "sk-test-NEVER-WRITE-THIS-KEY-7f3a"

// stack is what every test shares: the server and the built binaries.
type stack struct {
	address   string
	namespace string
	binDir    string
	server    *temporalserver.Server // the dev server or the PostgreSQL-backed cluster
	cluster   bool
}

// suite is set once by TestMain and read-only afterwards.
var suite stack

func TestMain(m *testing.M) {
	code, err := runMain(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runMain(m *testing.M) (int, error) {
	binDir, err := os.MkdirTemp("", "ralph-it-bin-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(binDir)
	for name, pkg := range map[string]string{"worker": "./worker", "starter": "./starter", "ralph-codec-server": "./cmd/ralph-codec-server"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg)
		cmd.Dir = "../.." // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	suite.binDir = binDir

	stateDir, err := os.MkdirTemp("", "ralph-it-state-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(stateDir)
	// A cold build of the Temporal CLI or server takes minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	suite.cluster = temporalserver.ClusterRequested()
	srv, err := temporalserver.StartForSuite(ctx, suite.cluster, stateDir, nil)
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	// Both setups register Ralph's search attributes; the worker relies on it.
	c, err := srv.Dial(ctx, client.Options{})
	if err != nil {
		return 0, fmt.Errorf("dial the %s: %w", srv.Kind, err)
	}
	err = temporalserver.SearchAttributesRegistered(ctx, c, srv.Namespace)
	c.Close()
	if err != nil {
		return 0, fmt.Errorf("the %s: %w", srv.Kind, err)
	}
	suite.server, suite.address, suite.namespace = srv, srv.Address, srv.Namespace
	fmt.Printf("integration suite against the %s at %s\n", srv.Kind, suite.address)
	return m.Run(), nil
}

func dial(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: suite.address, Namespace: suite.namespace})
	if err != nil {
		t.Fatalf("dial %s: %v", suite.address, err)
	}
	t.Cleanup(c.Close)
	return c
}

// env is one test's world: a task queue of its own, a model script, dirs.
type env struct {
	t         *testing.T
	queue     string
	model     *fakeopenai.Server
	root      string // workspace root
	sessions  string // session dir
	client    client.Client
	workerEnv []string
	workers   []*process
}

func newEnv(t *testing.T, script fakeopenai.Script, extraEnv ...string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{
		t:        t,
		queue:    "it-" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")),
		model:    fakeopenai.NewServer(script),
		root:     filepath.Join(dir, "workspaces"),
		sessions: filepath.Join(dir, "sessions"),
		client:   dial(t),
	}
	t.Cleanup(e.model.Close)
	// A worker the test killed in the middle of a verify leaves its tool
	// cache overlay mounted (the next worker on its session directory
	// removes it; a test's "other host" never does): none may outlive the
	// test's directories, which all share dir's parent.
	t.Cleanup(func() { toolcache.Unmount(filepath.Dir(dir)) })
	e.workerEnv = append([]string{
		"TEMPORAL_ADDRESS=" + suite.address,
		"TEMPORAL_NAMESPACE=" + suite.namespace,
		"RALPH_TASK_QUEUE=" + e.queue,
		// A deployment of its own per test: a new task queue joining an
		// already-current version of a shared deployment is routed to it
		// only once the server has propagated the version to the queue,
		// and a run started before that waits on unversioned pollers.
		"RALPH_DEPLOYMENT_NAME=" + e.queue,
		"RALPH_MODEL=scripted-model",
		"OPENAI_BASE_URL=" + e.model.BaseURL(),
		"OPENAI_API_KEY=" + testAPIKey,
		"RALPH_WORKSPACE_ROOT=" + e.root,
		"RALPH_SESSION_DIR=" + e.sessions,
		"RALPH_MAX_ROUNDS=10",
		"RALPH_HEARTBEAT_TIMEOUT_SECONDS=3",
		"RALPH_LOG_FORMAT=json",
	}, extraEnv...)
	return e
}

// process is a started binary whose output is kept for diagnosis.
type process struct {
	cmd  *exec.Cmd
	out  *testkit.Buffer
	done chan struct{}
}

// startWorker starts the worker binary on the test's task queue and waits
// until it polls.
func (e *env) startWorker(extraEnv ...string) *process {
	e.t.Helper()
	cmd := exec.Command(filepath.Join(suite.binDir, "worker"))
	cmd.Env = append(append(os.Environ(), e.workerEnv...), extraEnv...)
	p := &process{cmd: cmd, out: &testkit.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start worker: %v", err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	readyErr := temporalserver.WaitPolling(ctx, e.client, e.queue, cmd.Process.Pid, p.done)
	// A versioned worker says it polls once its version's routing is settled
	// (RALPH_SET_CURRENT done), so runs started next reach it.
	if readyErr == nil {
		readyErr = wait.Until(ctx, 50*time.Millisecond, func(context.Context) error {
			if strings.Contains(p.out.String(), "worker is polling") {
				return nil
			}
			select {
			case <-p.done:
				return wait.Final(fmt.Errorf("worker pid %d exited before it was ready", cmd.Process.Pid))
			default:
				return fmt.Errorf("worker pid %d never logged that it polls", cmd.Process.Pid)
			}
		})
	}
	// Cleanup is registered before a readiness failure ends the test, so the
	// process is stopped and its log shown either way.
	e.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if e.t.Failed() {
			e.t.Logf("worker pid %d output:\n%s", cmd.Process.Pid, tail(p.out.String(), 4000))
		}
	})
	e.workers = append(e.workers, p)
	if readyErr != nil {
		e.t.Fatalf("worker: %v", readyErr)
	}
	return p
}

// kill ends worker p as a crash does (SIGKILL) and waits until it is gone.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// drain stops worker p as a deploy does (SIGTERM: running rounds get its
// stop timeout) and waits for it to exit.
func (e *env) drain(p *process) {
	e.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		e.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		e.t.Fatalf("worker pid %d did not drain within a minute", p.cmd.Process.Pid)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// start starts a Ralph run with raw JSON input, as the temporal CLI would.
func (e *env) start(id, input string) client.WorkflowRun {
	e.t.Helper()
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 10 * time.Minute,
	}, workflows.WorkflowName, json.RawMessage(input))
	if err != nil {
		e.t.Fatalf("start %s: %v", id, err)
	}
	return run
}

func (e *env) result(run client.WorkflowRun) (workflows.Result, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var res workflows.Result
	err := run.Get(ctx, &res)
	return res, err
}

func (e *env) status(id string) workflows.Status {
	e.t.Helper()
	v, err := e.client.QueryWorkflow(context.Background(), id, "", workflows.StatusQueryName)
	if err != nil {
		e.t.Fatalf("query %s: %v", id, err)
	}
	var st workflows.Status
	if err := v.Get(&st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// transcripts lists every transcript file under the session dir.
func (e *env) transcripts() []string {
	var files []string
	_ = filepath.WalkDir(e.sessions, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// noKeyAnywhere checks that the API key was written nowhere we can see:
// transcripts, workspaces, worker logs and histories.
func (e *env) noKeyAnywhere(workflowIDs ...string) {
	e.t.Helper()
	for _, w := range e.workers {
		if strings.Contains(w.out.String(), testAPIKey) {
			e.t.Errorf("API key in the log of worker %d", w.cmd.Process.Pid)
		}
	}
	for _, dir := range []string{e.sessions, e.root} {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			// Regular files only: a FIFO a command left would block the read.
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			data, _ := os.ReadFile(path)
			if bytes.Contains(data, []byte(testAPIKey)) {
				e.t.Errorf("API key written to %s", path)
			}
			return nil
		})
	}
	for _, id := range workflowIDs {
		iter := e.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				e.t.Fatalf("read history of %s: %v", id, err)
			}
			if strings.Contains(ev.String(), testAPIKey) {
				e.t.Errorf("API key in the history of %s (event %d)", id, ev.GetEventId())
			}
		}
	}
}

// ---- model scripts ----

// turn is one request from the point of view of a scripted agent: the
// request (Round, Step, Prompt, LastToolOutput come from it) and which
// session of its round it belongs to.
type turn struct {
	fakeopenai.Request
	Session int // 1-based count of sessions started for this round so far
}

// agentScript turns a per-turn function into a fake server script. It is
// safe for concurrent sessions.
func agentScript(play func(tn turn) fakeopenai.Response) fakeopenai.Script {
	var mu sync.Mutex
	sessions := map[int]int{}
	return fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		mu.Lock()
		if req.Step() == 0 {
			sessions[req.Round()]++
		}
		tn := turn{Request: req, Session: sessions[req.Round()]}
		mu.Unlock()
		return play(tn)
	}}
}

func continueArgs(summary string, next ...string) fakeopenai.ReportArgs {
	return fakeopenai.ReportArgs{Status: "continue", Summary: summary, Evidence: []string{}, NextSteps: next}
}

func completeArgs(summary string, evidence ...string) fakeopenai.ReportArgs {
	return fakeopenai.ReportArgs{Status: "complete", Summary: summary, Evidence: evidence, NextSteps: []string{}}
}

func submit(r fakeopenai.ReportArgs) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReport(r))
}

func tool(name string, args any) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.CallJSON(name, args))
}

// ---- processes ----

// waitForFile waits until path exists with non-empty content.
func waitForFile(t *testing.T, path string, within time.Duration) string {
	t.Helper()
	var text string
	err := wait.For(context.Background(), within, 50*time.Millisecond, func(context.Context) error {
		data, err := os.ReadFile(path)
		if text = strings.TrimSpace(string(data)); err == nil && text == "" {
			err = errors.New("empty")
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s did not appear within %v: %v", path, within, err)
	}
	return text
}

// runBinary runs one of the built binaries to completion.
func runBinary(t *testing.T, name string, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(suite.binDir, name), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return out.String(), exitErr.ExitCode()
	}
	if err != nil {
		t.Fatalf("run %s: %v", name, err)
	}
	return out.String(), 0
}

// temporalCLI runs the temporal CLI against the suite's server.
func temporalCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := temporalserver.EnsureCLI(context.Background(), nil)
	if err != nil {
		t.Fatalf("temporal CLI: %v", err)
	}
	args = append(args, "--address", suite.address, "--namespace", suite.namespace)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// restartServer stops the suite's server with sig (SIGKILL: as a crash
// would) and starts it again on the same address and storage.
func restartServer(t *testing.T, sig syscall.Signal) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if sig == syscall.SIGKILL {
		if err := suite.server.Kill(); err != nil {
			t.Fatalf("kill the server: %v", err)
		}
	}
	if err := suite.server.Restart(ctx); err != nil {
		t.Fatalf("restart the server after %v: %v", sig, err)
	}
}
