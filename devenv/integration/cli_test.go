package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// byObjective answers by the objective's keyword, so one worker serves
// several runs of the same test.
func byObjective(tn turn) fakeopenai.Response {
	p := tn.Prompt()
	switch {
	case strings.Contains(p, "cli-blocked"):
		return submit(fakeopenai.ReportArgs{Status: "blocked", Summary: "stuck", Evidence: []string{}, NextSteps: []string{}, Blocker: "no credentials"})
	case strings.Contains(p, "cli-budget"):
		return submit(continueArgs("more to do", "keep going"))
	case strings.Contains(p, "cli-fail"):
		return fakeopenai.Status(403, "forbidden")
	case strings.Contains(p, "cli-sleep"):
		if tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": longCommand})
		}
		return submit(completeArgs("slept", "slept"))
	case tn.Round() == 1:
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "out.txt", "content": "made by the CLI run\n"})
		}
		return submit(continueArgs("wrote out.txt", "check out.txt"))
	default:
		return submit(completeArgs("out.txt checked", "out.txt exists"))
	}
}

// The exact commands of README.md and docs/reference.md: start, query, result with the temporal CLI.
func TestRealStackTemporalCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(byObjective))
	e.startWorker()
	id := "fix-tests"
	out, err := temporalCLI(t, "workflow", "start", "--type", "Ralph", "--task-queue", e.queue, "--workflow-id", id,
		"--input", `{"objective":"make go test ./... pass","maxRounds":8,"workspace":"myrepo"}`)
	if err != nil {
		t.Fatalf("temporal workflow start: %v\n%s", err, out)
	}
	out, err = temporalCLI(t, "workflow", "result", "--workflow-id", id, "--output", "json")
	if err != nil {
		t.Fatalf("temporal workflow result: %v\n%s", err, out)
	}
	var res struct {
		Status string           `json:"status"`
		Result workflows.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("decode `temporal workflow result --output json`: %v\n%s", err, out)
	}
	if res.Result.Status != report.OutcomeComplete || res.Result.RoundsStarted != 2 || res.Result.Report.Evidence[0] != "out.txt exists" {
		t.Fatalf("result = %+v\n%s", res, out)
	}
	out, err = temporalCLI(t, "workflow", "query", "--workflow-id", id, "--name", "status", "--output", "json")
	if err != nil {
		t.Fatalf("temporal workflow query: %v\n%s", err, out)
	}
	var q struct {
		QueryResult []workflows.Status `json:"queryResult"`
	}
	if err := json.Unmarshal([]byte(out), &q); err != nil || len(q.QueryResult) != 1 {
		t.Fatalf("decode query output: %v\n%s", err, out)
	}
	if st := q.QueryResult[0]; st.Phase != workflows.PhaseFinished || st.Round != 2 || st.MaxRounds != 8 || len(st.Rounds) != 2 {
		t.Fatalf("status = %+v", st)
	}
	if _, err := os.Stat(filepath.Join(e.root, "myrepo", "out.txt")); err != nil {
		t.Fatalf("workspace myrepo: %v", err)
	}

	// Cancel with the CLI.
	id2 := "cli-cancel"
	if out, err := temporalCLI(t, "workflow", "start", "--type", "Ralph", "--task-queue", e.queue, "--workflow-id", id2,
		"--input", `{"objective":"cli-sleep","workspace":"sleepy"}`); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	pids := waitForPIDs(t, filepath.Join(e.root, "sleepy", "pids.txt"), 2)
	if out, err := temporalCLI(t, "workflow", "cancel", "--workflow-id", id2); err != nil {
		t.Fatalf("temporal workflow cancel: %v\n%s", err, out)
	}
	waitClosed(t, e, id2, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED)
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Errorf("process %d survived the CLI cancel", pid)
		}
	}
}

func waitClosed(t *testing.T, e *env, id string, want enumspb.WorkflowExecutionStatus) {
	t.Helper()
	err := wait.For(context.Background(), 60*time.Second, 100*time.Millisecond, func(context.Context) error {
		desc, err := e.client.DescribeWorkflow(context.Background(), id, "")
		if err != nil {
			return wait.Final(err)
		}
		switch got := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus(); got {
		case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			return fmt.Errorf("%s still running after 60s", id)
		case want:
			return nil
		default:
			return wait.Final(fmt.Errorf("%s closed as %v, want %v", id, got, want))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRealStackStarterExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(byObjective))
	e.startWorker()
	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	tests := []struct {
		workspace, objective string
		extra                []string
		wantCode             int
		wantOut              string
	}{
		{"st-complete", "write out.txt", nil, 0, "A worker reported completion after 2 rounds."},
		{"st-blocked", "cli-blocked", nil, 3, "A worker reported a blocker after 1 round."},
		{"st-budget", "cli-budget", []string{"--max-rounds", "2"}, 4, "The 2-round limit was reached with work remaining."},
		{"st-fail", "cli-fail", nil, 1, "RoundFailed"},
		{"st-bad", "x", []string{"--max-rounds", "0"}, 2, "max-rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.workspace, func(t *testing.T) {
			args := append([]string{"run", "--workspace", tt.workspace, "--objective", tt.objective}, tt.extra...)
			out, code := runBinary(t, "starter", starterEnv, args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantOut) {
				t.Fatalf("starter %v: exit %d, want %d with %q; output:\n%s", args, code, tt.wantCode, tt.wantOut, out)
			}
		})
	}
	// A second start on an open id is refused; status/result of a closed run work.
	out, code := runBinary(t, "starter", starterEnv, "result", "--workflow-id", "ralph-st-complete")
	if code != 0 || !strings.Contains(out, "A worker reported completion") {
		t.Fatalf("starter result: exit %d\n%s", code, out)
	}
	out, code = runBinary(t, "starter", starterEnv, "status", "--workflow-id", "ralph-st-blocked")
	if code != 0 || !strings.Contains(out, `"phase": "finished"`) {
		t.Fatalf("starter status: exit %d\n%s", code, out)
	}
	// No worker on a queue: a clear error, not a hang.
	out, code = runBinary(t, "starter", append(starterEnv, "RALPH_TASK_QUEUE=nobody-polls-this"), "run", "--workspace", "w", "--objective", "x")
	if code != 1 || !strings.Contains(out, "no worker is polling") {
		t.Fatalf("starter without a worker: exit %d\n%s", code, out)
	}
}

func TestRealStackStarterInterruptCancelsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(byObjective))
	e.startWorker()
	cmd := exec.Command(filepath.Join(suite.binDir, "starter"), "run", "--workspace", "interrupt", "--objective", "cli-sleep")
	cmd.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+suite.address, "TEMPORAL_NAMESPACE="+suite.namespace, "RALPH_TASK_QUEUE="+e.queue)
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids := waitForPIDs(t, filepath.Join(e.root, "interrupt", "pids.txt"), 2)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("starter did not exit after SIGINT:\n%s", out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("starter exit code %d, want 130:\n%s", code, out.String())
	}
	// The starter returned only after the run closed as cancelled.
	desc, err := e.client.DescribeWorkflow(context.Background(), "ralph-interrupt", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus(); got != enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED {
		t.Fatalf("workflow status after SIGINT = %v, want canceled", got)
	}
	for _, pid := range pids {
		if proc.Alive(pid) {
			t.Errorf("process %d survived the interrupted run", pid)
		}
	}
}
