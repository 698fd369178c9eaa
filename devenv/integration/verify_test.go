package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// A worker claims completion before the check passes: the refusal (with the
// exit code) reaches the model, it fixes the workspace, and the run completes
// carrying the verification record; the starter's text names the command.
func TestRealStackVerifyRefusesAnEarlyCompletion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch tn.Step() {
		case 0:
			return submit(completeArgs("claims done too early", "it feels done"))
		case 1:
			return tool("write_file", map[string]string{"path": "ok.txt", "content": "fixed\n"})
		default:
			return submit(completeArgs("really done", "ok.txt exists"))
		}
	}))
	e.startWorker()
	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	out, code := runBinary(t, "starter", starterEnv, "run", "--workspace", "verify-early", "--objective", "create ok.txt",
		"--verify", "test -f ok.txt || { echo ok.txt is missing; exit 7; }")
	if code != 0 || !strings.Contains(out, "A worker reported completion after 1 round; the verify command passed (exit 0): test -f ok.txt") {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	refusal := ""
	for _, req := range e.model.Requests() {
		if out := req.LastToolOutput(); strings.Contains(out, "Completion refused") {
			refusal = out
		}
	}
	if !strings.Contains(refusal, "Exit code: 7") || !strings.Contains(refusal, "ok.txt is missing") {
		t.Fatalf("the model never saw the refusal with the exit code; last refusal: %q", refusal)
	}
	var res workflows.Result
	if err := e.client.GetWorkflow(t.Context(), "ralph-verify-early", "").Get(t.Context(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Verification == nil || res.Verification.ExitCode != 0 || !strings.HasPrefix(res.Verification.Command, "test -f ok.txt") {
		t.Fatalf("result = %+v", res)
	}
	if st := e.status("ralph-verify-early"); len(st.Rounds) != 1 || !st.Rounds[0].Verified {
		t.Fatalf("status rounds = %+v", st.Rounds)
	}
}

// A command that always fails runs exactly RALPH_VERIFY_ATTEMPTS times in a
// round; the round then hands off with continue.
func TestRealStackVerifyAttemptsAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Round() == 1 && tn.Step() < 4 {
			return submit(completeArgs("done, surely", "trust me"))
		}
		if tn.Round() == 1 {
			return submit(continueArgs("the check still fails", "make the check pass"))
		}
		return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{Status: "blocked", Summary: "cannot fix", Blocker: "the check is broken"}))
	}), "RALPH_VERIFY_ATTEMPTS=2")
	e.startWorker()
	res, err := e.result(e.start("verify-bounded", `{"objective":"pass the check","verifyCommand":"echo run >> verify-runs; exit 1"}`))
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := os.ReadFile(filepath.Join(e.root, "verify-bounded", "verify-runs"))
	if n := strings.Count(string(runs), "run"); n != 2 {
		t.Fatalf("the verify command ran %d times, want exactly RALPH_VERIFY_ATTEMPTS=2", n)
	}
	if st := e.status("verify-bounded"); st.Rounds[0].Status != report.StatusContinue || res.Status != report.OutcomeBlocked {
		t.Fatalf("round 1 = %+v, result %+v", st.Rounds[0], res)
	}
}

// The deployment's RALPH_VERIFY_COMMAND applies when the run names none.
func TestRealStackDeploymentVerifyCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		return submit(completeArgs("done", "nothing to do"))
	}), "RALPH_VERIFY_COMMAND=echo checked > checked.txt")
	e.startWorker()
	res, err := e.result(e.start("verify-default", `{"objective":"nothing"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Verification == nil || res.Verification.Command != "echo checked > checked.txt" {
		t.Fatalf("result = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(e.root, "verify-default", "checked.txt")); err != nil {
		t.Fatalf("the deployment's verify command did not run in the workspace: %v", err)
	}
}

// A cancel during a long verify command closes the run as canceled and the
// command is gone.
func TestRealStackCancelDuringVerify(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		return submit(completeArgs("done", "claimed"))
	}))
	e.startWorker()
	// A sleep of an unusual length marks the verify command's process, which
	// may live in its own PID namespace, so it is found by its command line.
	const marker = "sleep 313"
	run := e.start("verify-cancel", `{"objective":"x","verifyCommand":"echo started > verify-started; `+marker+`"}`)
	waitForFile(t, filepath.Join(e.root, "verify-cancel", "verify-started"), 60*time.Second)
	if n := len(proc.Matching(marker)); n == 0 {
		t.Fatal("the verify command is not running")
	}
	if err := e.client.CancelWorkflow(t.Context(), "verify-cancel", ""); err != nil {
		t.Fatal(err)
	}
	_, err := e.result(run)
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("run error = %v, want canceled", err)
	}
	if left := proc.Matching(marker); len(left) > 0 {
		t.Fatalf("the verify command outlived the cancel: pids %v", left)
	}
	if st := e.status("verify-cancel"); st.Outcome != "cancelled" {
		t.Fatalf("status = %+v", st)
	}
}
