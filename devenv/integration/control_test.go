package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
)

// slowRoundsScript: every round writes round-<R>.txt after a short command
// and hands off with continue, so rounds take a moment and change the tree.
func slowRoundsScript(tn turn) fakeopenai.Response {
	if tn.Step() == 0 {
		return tool("run_command", map[string]any{"command": fmt.Sprintf("sleep 1; echo %d > round-%d.txt", tn.Round(), tn.Round())})
	}
	return submit(continueArgs(fmt.Sprintf("round %d wrote its file", tn.Round()), "write the next file"))
}

// listByQuery waits until a visibility query finds the workflow id.
func (e *env) listByQuery(query, id string, within time.Duration) {
	e.t.Helper()
	err := wait.For(context.Background(), within, 200*time.Millisecond, func(ctx context.Context) error {
		resp, err := e.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: suite.namespace, Query: query + fmt.Sprintf(" AND WorkflowId = '%s'", id),
		})
		if err == nil && len(resp.GetExecutions()) != 1 {
			err = fmt.Errorf("%d executions", len(resp.GetExecutions()))
		}
		return err
	})
	if err != nil {
		e.t.Fatalf("visibility query %q did not find %s within %s (last error %v)", query, id, within, err)
	}
}

func (e *env) waitPhase(id, phase string, within time.Duration) {
	e.t.Helper()
	err := wait.For(context.Background(), within, 100*time.Millisecond, func(context.Context) error {
		if st := e.status(id); st.Phase != phase {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("run %s did not reach phase %s within %s (%v)", id, phase, within, err)
	}
}

func TestRealStackPauseListResumeStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(slowRoundsScript))
	e.startWorker()
	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	out, code := runBinary(t, "starter", starterEnv, "start", "--workspace", "steer", "--objective", "write files until stopped")
	if code != 0 {
		t.Fatalf("starter start: exit %d\n%s", code, out)
	}
	const id = "ralph-steer"
	e.listByQuery("RalphPhase = 'running' AND RalphWorkspace = 'steer'", id, 30*time.Second)

	out, code = runBinary(t, "starter", starterEnv, "pause", id)
	if code != 0 || !strings.Contains(out, "pause accepted") {
		t.Fatalf("starter pause: exit %d\n%s", code, out)
	}
	out, code = runBinary(t, "starter", starterEnv, "pause", id)
	if code != 1 || !strings.Contains(out, "refused pause") {
		t.Fatalf("a second pause: exit %d, want refused\n%s", code, out)
	}
	e.waitPhase(id, "paused", 60*time.Second)
	e.listByQuery("RalphPhase = 'paused'", id, 30*time.Second)
	paused := e.status(id)
	time.Sleep(3 * time.Second) // a paused run starts no round
	if st := e.status(id); st.Round != paused.Round || st.Phase != "paused" {
		t.Fatalf("a round started while paused: %+v then %+v", paused, st)
	}

	out, code = runBinary(t, "starter", starterEnv, "resume", id)
	if code != 0 || !strings.Contains(out, "resume accepted") {
		t.Fatalf("starter resume: exit %d\n%s", code, out)
	}
	if err := wait.For(context.Background(), 60*time.Second, 100*time.Millisecond, func(context.Context) error {
		if st := e.status(id); st.Round <= paused.Round {
			return fmt.Errorf("no round after resume: %+v", st)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out, code = runBinary(t, "starter", starterEnv, "stop", id, "--reason", "enough files")
	if code != 0 || !strings.Contains(out, "stop accepted") || !strings.Contains(out, `"stopRequested": true`) {
		t.Fatalf("starter stop: exit %d\n%s", code, out)
	}
	out, code = runBinary(t, "starter", starterEnv, "result", id)
	if code != 5 || !strings.Contains(out, "The run was stopped by an operator after") || !strings.Contains(out, "enough files") {
		t.Fatalf("starter result of a stopped run: exit %d, want 5\n%s", code, out)
	}
	st := e.status(id)
	if st.Outcome != report.OutcomeStopped || st.Round != paused.Round+1 {
		t.Fatalf("status = %+v: want stopped right after the round that ran when stop came", st)
	}
	e.listByQuery("RalphOutcome = 'stopped' AND RalphPhase = 'finished'", id, 30*time.Second)
	out, code = runBinary(t, "starter", starterEnv, "resume", id)
	if code != 1 || !strings.Contains(out, "has already closed (completed): nothing to resume") {
		t.Fatalf("resume after the end: exit %d\n%s", code, out)
	}
}

func TestRealStackUpdatesWithTheTemporalCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(slowRoundsScript))
	e.startWorker()
	e.start("cli-steer", `{"objective":"write files until stopped","workspace":"cli-steer"}`)
	out, err := temporalCLI(t, "workflow", "update", "execute", "--workflow-id", "cli-steer", "--name", "pause")
	if err != nil || !strings.Contains(out, "pauseRequested") {
		t.Fatalf("temporal workflow update execute pause: %v\n%s", err, out)
	}
	e.waitPhase("cli-steer", "paused", 60*time.Second)
	out, err = temporalCLI(t, "workflow", "update", "execute", "--workflow-id", "cli-steer", "--name", "stop", "--input", `{"reason":"from the cli"}`)
	if err != nil || !strings.Contains(out, "stopRequested") {
		t.Fatalf("temporal workflow update execute stop: %v\n%s", err, out)
	}
	out, err = temporalCLI(t, "workflow", "result", "--workflow-id", "cli-steer", "-o", "json")
	if err != nil || !strings.Contains(out, `"stopped"`) || !strings.Contains(out, "from the cli") {
		t.Fatalf("result: %v\n%s", err, out)
	}
}

// TestRealStackTokenBudgetEndsTheRun: a budget of 2,500 tokens cannot pay
// for a round's first request plus the answer it reserves, so the session
// hands off at once (the token budget forced it) and that round is the
// run's last: the run ends with limit tokens after one round instead of
// running forced hand-off rounds until the idle budget ends it.
func TestRealStackTokenBudgetEndsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(usageScript), "RALPH_MAX_IDLE_ROUNDS=100")
	e.startWorker()
	res, err := e.result(e.start("token-budget", `{"objective":"spend tokens","maxTokens":2500}`))
	if err != nil {
		t.Fatal(err)
	}
	spent := res.Usage.PromptTokens + res.Usage.CompletionTokens
	if res.Status != report.OutcomeBudgetLimited || res.Limit != "tokens" || res.RoundsStarted != 1 || spent != 1000 {
		t.Fatalf("result = %+v (spent %d)", res, spent)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 || len(reqs[0].Chat.Tools) != 1 {
		t.Fatalf("%d requests, want 1 offering only submit_report (the forced hand-off)", len(reqs))
	}
}

func TestRealStackIdleBudgetEndsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Round() == 1 && tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "only.txt", "content": "the only change"})
		}
		return submit(continueArgs(fmt.Sprintf("round %d looked around", tn.Round()), "look again"))
	}), "RALPH_MAX_IDLE_ROUNDS=2")
	e.startWorker()
	res, err := e.result(e.start("idle-budget", `{"objective":"change nothing after round 1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Limit != "idle" || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v: round 1 changed the workspace, rounds 2 and 3 did not", res)
	}
}

// TestRealStackProviderOutageSurvived: the model answers 503 for 150 s; the
// in-round retries run out, the round is deferred and run again as fresh
// sessions after durable waits (30 s doubling), and the run completes once
// the provider is back.
func TestRealStackProviderOutageSurvived(t *testing.T) {
	t.Parallel()
	const outage = 150 * time.Second
	var once sync.Once
	var outageEnds time.Time
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		once.Do(func() { outageEnds = time.Now().Add(outage) })
		if time.Now().Before(outageEnds) {
			return fakeopenai.Status(503, "the service is overloaded")
		}
		return submit(completeArgs("done after the outage", "the provider came back"))
	}), "RALPH_MODEL_RETRIES=3", "RALPH_MODEL_CALL_TIMEOUT_SECONDS=5")
	e.startWorker()
	start := time.Now()
	res, err := e.result(e.start("outage", `{"objective":"outlast the outage"}`))
	if err != nil {
		t.Fatalf("the run did not survive a %s outage: %v", outage, err)
	}
	if res.Status != report.OutcomeComplete {
		t.Fatalf("result = %+v after %s", res, time.Since(start))
	}
	if n := len(e.transcripts()); n < 2 {
		t.Fatalf("%d attempts: want the round retried as fresh sessions", n)
	}
	t.Logf("a %s outage survived in %s over %d attempts", outage, time.Since(start).Round(time.Second), len(e.transcripts()))
}

// TestRealStackRollingDeploysDuringOneRound: three workers are SIGTERMed in
// turn while one round runs; a fresh worker takes the round over each time
// and the run completes.
func TestRealStackRollingDeploysDuringOneRound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Round() == 1 && tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": "echo $$ >> attempts; while [ ! -e release ]; do sleep 0.1; done"})
		}
		return submit(completeArgs("survived the deploys", "the round finished on the last worker"))
	}), "RALPH_WORKER_STOP_TIMEOUT_SECONDS=1")
	ws := filepath.Join(e.root, "deploys")
	workers := []*process{e.startWorker()}
	run := e.start("deploys", `{"objective":"survive three deploys","workspace":"deploys"}`)
	var drains []time.Duration
	for deploy := 1; deploy <= 3; deploy++ {
		waitForLines(t, filepath.Join(ws, "attempts"), deploy, 90*time.Second)
		next := e.startWorker() // the new version comes up first, as in a rolling deploy
		old := workers[len(workers)-1]
		sent := time.Now()
		if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-old.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("worker %d did not drain within 60 s", old.cmd.Process.Pid)
		}
		waitForLines(t, filepath.Join(ws, "attempts"), deploy+1, 90*time.Second)
		drains = append(drains, time.Since(sent))
		workers = append(workers, next)
	}
	if err := os.WriteFile(filepath.Join(ws, "release"), []byte("go"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.result(run)
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("run across three deploys: %+v, %v", res, err)
	}
	t.Logf("SIGTERM to the round running again on the next worker: %v", drains)
}

// waitForLines waits until path has at least n lines.
func waitForLines(t *testing.T, path string, n int, within time.Duration) {
	t.Helper()
	err := wait.For(context.Background(), within, 100*time.Millisecond, func(context.Context) error {
		data, _ := os.ReadFile(path)
		if got := strings.Count(string(data), "\n"); got < n {
			return fmt.Errorf("%s has %d line(s) after %s, want %d", path, got, within, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
