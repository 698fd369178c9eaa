//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/proc"
)

// spawnScript starts a background sleep and a foreground one, recording the
// pids of the background sleep and of the shell itself, so tests can check
// that children die with the command.
const spawnScript = `sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; sleep 300`

// assertGone waits (generously) for every pid to be dead.
func assertGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range proc.WaitGone(context.Background(), 5*time.Second, pids...) {
		t.Errorf("process %d still alive", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestRunCommandHappyPath(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	res := call(t, w, "run_command", map[string]any{"command": "echo out; echo err >&2; pwd; exit 3"})
	out := mustOK(t, res) // a non-zero exit is not a tool failure
	wantDir, _ := filepath.EvalSymlinks(dir)
	want := "exit code: 3\nout\nerr\n" + wantDir + "\n"
	if out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// stdin is empty: cat returns at once instead of waiting for input.
	out = mustOK(t, call(t, w, "run_command", map[string]any{"command": "cat; echo done", "timeout_seconds": 10}))
	if out != "exit code: 0\ndone\n" {
		t.Fatalf("cat with empty stdin: %q", out)
	}
	out = mustOK(t, call(t, w, "run_command", map[string]any{"command": "true"}))
	if out != "exit code: 0\n(no output)\n" {
		t.Fatalf("no output: %q", out)
	}
	// A command killed by a signal reports it like a shell does.
	out = mustOK(t, call(t, w, "run_command", map[string]any{"command": "kill -TERM $$"}))
	if !strings.HasPrefix(out, "exit code: 143 (killed by signal terminated)") {
		t.Fatalf("signalled: %q", out)
	}
	mustFail(t, call(t, w, "run_command", map[string]any{"command": "true", "timeout_seconds": -1}), "positive")
	mustFail(t, call(t, w, "run_command", map[string]any{"command": "  "}), `"command"`)
}

func TestRunCommandTimeoutKillsProcessGroup(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	start := time.Now()
	res := call(t, w, "run_command", map[string]any{"command": "echo started; " + spawnScript, "timeout_seconds": 1})
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("Run took %v with a 1 s timeout", elapsed)
	}
	mustFail(t, res, "timed out after 1s")
	if !strings.Contains(res.Output, "started") {
		t.Errorf("output before the timeout lost: %q", res.Output)
	}
	assertGone(t, testkit.ReadPID(t, filepath.Join(dir, "bg.pid")), testkit.ReadPID(t, filepath.Join(dir, "sh.pid")))
}

func TestRunCommandTimeoutCapped(t *testing.T) {
	w, _ := newTestWorkspace(t, Limits{MaxCommandTimeout: time.Second})
	res := call(t, w, "run_command", map[string]any{"command": "sleep 300", "timeout_seconds": 99999})
	mustFail(t, res, "timed out after 1s")
	if !strings.Contains(res.Output, "capped to 1s") {
		t.Errorf("cap not reported: %q", res.Output)
	}
}

func TestRunCommandBackgroundChildrenDoNotOutliveIt(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	// The background sleep holds the output pipe open; Run must still
	// return promptly and take it down.
	start := time.Now()
	out := mustOK(t, call(t, w, "run_command", map[string]any{"command": "sleep 300 & echo $! > bg.pid; echo bye"}))
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("Run waited %v for a background child", elapsed)
	}
	if out != "exit code: 0\nbye\n" {
		t.Fatalf("got %q", out)
	}
	assertGone(t, testkit.ReadPID(t, filepath.Join(dir, "bg.pid")))
}

func TestRunCommandHugeOutputTruncated(t *testing.T) {
	w, _ := newTestWorkspace(t, DefaultLimits())
	out := mustOK(t, call(t, w, "run_command", map[string]any{"command": "seq 1 200000"}))
	full, err := exec.Command("seq", "1", "200000").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "exit code: 0\n1\n2\n3\n") {
		t.Fatalf("head lost: %q", out[:40])
	}
	if !strings.HasSuffix(out, "\n199999\n200000\n") {
		t.Fatalf("tail lost: %q", out[len(out)-40:])
	}
	marker := fmt.Sprintf("[... %d characters cut from the middle of the output ...]", len(full)-DefaultOutputCap)
	if !strings.Contains(out, marker) {
		t.Fatalf("marker %q missing", marker)
	}
	body := strings.TrimPrefix(out, "exit code: 0\n")
	body = strings.Replace(body, "\n"+marker+"\n", "", 1)
	head := DefaultOutputCap * 2 / 5
	if len(body) != DefaultOutputCap || !strings.HasPrefix(string(full), body[:head]) || !strings.HasSuffix(string(full), body[head:]) {
		t.Fatalf("kept %d characters, want exactly the first %d and the last %d", len(body), head, DefaultOutputCap-head)
	}
}

func TestRunCommandCancelKillsProcessGroup(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		testkit.ReadPID(t, filepath.Join(dir, "sh.pid"))
		cancel()
	}()
	start := time.Now()
	_, err := toolNamed(t, w, "run_command").Run(ctx, json.RawMessage(`{"command":`+strconv.Quote(spawnScript)+`}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("cancel took %v", elapsed)
	}
	assertGone(t, testkit.ReadPID(t, filepath.Join(dir, "bg.pid")), testkit.ReadPID(t, filepath.Join(dir, "sh.pid")))
}

// The command environment is an allowlist: a credential that does not look
// like one (DATABASE_URL) is dropped as surely as an API key.
func TestRunCommandEnvironmentIsAllowlisted(t *testing.T) {
	w, _ := newTestWorkspace(t, DefaultLimits())
	t.Setenv("RALPH_TEST_PROVIDER_API_KEY", "sk-must-not-leak")
	t.Setenv("DATABASE_URL", "postgres://u:hunter2@db/x")
	t.Setenv("LC_TIME", "C.UTF-8")
	out := mustOK(t, call(t, w, "run_command", map[string]any{"command": "env"}))
	for _, leaked := range []string{"sk-must-not-leak", "hunter2"} {
		if strings.Contains(out, leaked) {
			t.Errorf("%s visible to commands:\n%s", leaked, out)
		}
	}
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LC_TIME=C.UTF-8"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("%s missing from the command environment:\n%s", want, out)
		}
	}
}

// lifelineHelperEnv makes TestLifelineHelper act as a worker process.
const lifelineHelperEnv = "RALPH_TOOLS_LIFELINE_WORKSPACE"

// TestLifelineHelper is not a test on its own: TestRunCommandDiesWithWorker
// runs the test binary with it as a stand-in worker and kill -9s it.
func TestLifelineHelper(t *testing.T) {
	dir := os.Getenv(lifelineHelperEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	w, err := OpenWorkspace(dir, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = toolNamed(t, w, "run_command").Run(context.Background(), json.RawMessage(`{"command":`+strconv.Quote(spawnScript)+`}`))
	t.Fatal("the command should have outlived this process")
}

func TestRunCommandDiesWithWorker(t *testing.T) {
	dir := t.TempDir()
	worker := testkit.StartStandIn(t, "TestLifelineHelper", lifelineHelperEnv+"="+dir)
	bg := testkit.ReadPID(t, filepath.Join(dir, "bg.pid"))
	sh := testkit.ReadPID(t, filepath.Join(dir, "sh.pid"))
	if !proc.Alive(bg) || !proc.Alive(sh) {
		t.Fatal("command not running before the worker is killed")
	}
	worker.Kill(t)
	assertGone(t, bg, sh)
}

// TestCommandTimeoutReachesTheMaximum checks that a model may ask for the
// whole maximum (half an hour by default) and that only more is capped.
func TestCommandTimeoutReachesTheMaximum(t *testing.T) {
	w, _ := newTestWorkspace(t, DefaultLimits())
	l := w.Limits()
	ask := func(s float64) *float64 { return &s }
	for _, c := range []struct {
		asked *float64
		want  time.Duration
		note  bool
	}{
		{nil, DefaultCommandTimeout, false},
		{ask(1800), 1800 * time.Second, false},
		{ask(1799.5), 1799500 * time.Millisecond, false},
		{ask(1801), 1800 * time.Second, true},
	} {
		got, note, err := l.commandTimeout(c.asked)
		if err != nil || got != c.want || (note != "") != c.note {
			t.Errorf("commandTimeout(%v) = %v, %q, %v; want %v (note %v)", c.asked, got, note, err, c.want, c.note)
		}
	}
	if _, _, err := l.commandTimeout(ask(0)); err == nil {
		t.Error("timeout 0 accepted")
	}
	// Through the tool: asking for the maximum is not capped.
	out := mustOK(t, call(t, w, "run_command", map[string]any{"command": "echo ok", "timeout_seconds": 1800}))
	if out != "exit code: 0\nok\n" {
		t.Fatalf("output %q", out)
	}
}
