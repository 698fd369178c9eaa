package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/report"
)

// longCommand records the shell's pid and a child's pid, then waits on the
// child: killing only the shell would leave the sleep behind.
const longCommand = `echo $$ >> pids.txt; sleep 300 & echo $! >> pids.txt; wait`

func waitForPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	pids, err := proc.WaitPIDFile(context.Background(), path, n, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

func assertGone(t *testing.T, pids []int, what string) {
	t.Helper()
	for _, pid := range proc.WaitGone(context.Background(), 5*time.Second, pids...) {
		t.Errorf("%s: process %d still runs", what, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestRealStackCancelReachesQuiescence(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": longCommand, "timeout_seconds": 600})
		}
		return submit(completeArgs("slept", "slept 300 s"))
	}), "RALPH_COMMAND_TIMEOUT_SECONDS=900")
	e.startWorker()
	id := "cancel-quiescence"
	run := e.start(id, `{"objective":"sleep a long time","workspace":"cancel"}`)
	pids := waitForPIDs(t, filepath.Join(e.root, "cancel", "pids.txt"), 2)

	start := time.Now()
	if err := e.client.CancelWorkflow(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.result(run)
	latency := time.Since(start)
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("run ended with %v, want canceled", err)
	}
	// The workflow is closed: every command of the round must already be gone.
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Errorf("process %d of the round outlived the closed workflow", pid)
		}
	}
	desc, err := e.client.DescribeWorkflow(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Fatalf("workflow status = %v", got)
	}
	// The round's cancellation is recorded before the workflow closed.
	var sawActivityCanceled bool
	iter := e.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			sawActivityCanceled = true
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			if !sawActivityCanceled {
				t.Fatal("workflow closed before its round reported cancellation")
			}
		}
	}
	t.Logf("cancel to closed: %v", latency)
}

func TestRealStackWorkerCrashRoundFinishedByAnotherWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Session == 1 {
			if tn.Step() == 0 {
				return tool("run_command", map[string]any{"command": "echo crashed-session > marker.txt; " + longCommand})
			}
			return fakeopenai.Text("the first session must never get here")
		}
		// A fresh session on the same workspace: it sees the first one's file.
		if tn.Step() == 0 {
			return tool("read_file", map[string]string{"path": "marker.txt"})
		}
		if !strings.Contains(tn.LastToolOutput(), "crashed-session") {
			return fakeopenai.Text("workspace lost")
		}
		return submit(completeArgs("finished after a crash", "marker.txt survived"))
	}), "RALPH_HEARTBEAT_TIMEOUT_SECONDS=2")
	first := e.startWorker()
	id := "worker-crash"
	run := e.start(id, `{"objective":"survive a crash","workspace":"crash"}`)
	pids := waitForPIDs(t, filepath.Join(e.root, "crash", "pids.txt"), 2)
	e.startWorker() // polling itself, beside the first

	killed := time.Now()
	first.kill(t)
	assertGone(t, pids, "commands of the killed worker")

	res, err := e.result(run)
	recovery := time.Since(killed)
	if err != nil {
		t.Fatalf("run failed after the crash: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
		t.Fatalf("result = %+v", res)
	}
	st := e.status(id)
	if len(st.Rounds) != 1 {
		t.Fatalf("status = %+v", st)
	}
	if n := len(e.transcripts()); n != 2 {
		t.Fatalf("transcripts = %d, want one per attempt (2)", n)
	}
	t.Logf("kill -9 to run completed on the other worker: %v", recovery)
}

func TestRealStackModelFaultsMidRound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeopenai.Script{
		Queue: []fakeopenai.Response{
			fakeopenai.RateLimited("1"),
			fakeopenai.RateLimited("1"),
			fakeopenai.RateLimited("1"),
			tool("write_file", map[string]string{"path": "a.txt", "content": "a"}),
			fakeopenai.Status(500, "internal error"),
			fakeopenai.HTMLPage(502),
			fakeopenai.Hang(),
			fakeopenai.Drop(),
			submit(completeArgs("done despite faults", "a.txt written")),
		},
	}, "RALPH_MODEL_CALL_TIMEOUT_SECONDS=2", "RALPH_MODEL_RETRIES=5")
	e.startWorker()
	start := time.Now()
	res, err := e.result(e.start("model-faults", `{"objective":"weather the faults"}`))
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.Usage.ModelCalls < 2 {
		t.Fatalf("result = %+v", res)
	}
	if got := e.model.RequestCount(); got != 9 {
		t.Fatalf("model requests = %d, want all 9 scripted answers used", got)
	}
	// Three Retry-After: 1 answers were honoured.
	if elapsed := time.Since(start); elapsed < 3*time.Second {
		t.Fatalf("run took %v: Retry-After was not honoured", elapsed)
	}
	if _, err := os.Stat(filepath.Join(e.root, "model-faults", "a.txt")); err != nil {
		t.Fatalf("the round's work is missing: %v", err)
	}
}

func TestRealStackServerRestartMidRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			restartDuring(t, func() { restartServer(t, sig) })
		})
	}
}

// restartDuring runs a two-round objective and calls restart while round 1
// runs a command; the run must complete anyway.
func restartDuring(t *testing.T, restart func()) {
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo yes > started; while [ ! -e release ]; do sleep 0.1; done; echo released"})
		case tn.Round() == 1:
			return submit(continueArgs("survived", "finish"))
		default:
			return submit(completeArgs("finished", "the server came back"))
		}
	}))
	e.startWorker()
	id := "server-restart-" + strings.ToLower(regexp.MustCompile(`[^A-Za-z]+`).ReplaceAllString(t.Name(), "-"))
	run := e.start(id, `{"objective":"survive a server restart","workspace":"restart"}`)
	start := time.Now()
	ws := filepath.Join(e.root, "restart")
	waitForFile(t, filepath.Join(ws, "started"), 60*time.Second)
	restart()
	if err := os.WriteFile(filepath.Join(ws, "release"), []byte("go"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.result(run)
	if err != nil {
		t.Fatalf("run failed across the restart: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v", res)
	}
	t.Logf("run with a server restart took %v", time.Since(start))
}
