package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// Runs that last days, on the real stack with the worker and starter
// binaries: a retried start joins the open run (Update-with-Start, update
// describe) instead of failing or starting a second loop; extend raises
// the round cap of the running run.
func TestRealStackStartAttachAndExtend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 && len(tn.Chat.Tools) > 1 {
			return tool("run_command", map[string]any{"command": "sleep 3; date >> log.txt"})
		}
		return submit(continueArgs("logged the date", "log it again"))
	}), "RALPH_MAX_IDLE_ROUNDS=100")
	e.startWorker()
	env := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	start := []string{"start", "--workspace", "attach", "--objective", "log dates", "--max-rounds", "2"}
	if out, code := runBinary(t, "starter", env, start...); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	if out, code := runBinary(t, "starter", env, start...); code != 1 || !strings.Contains(out, "already open") {
		t.Fatalf("a second start without --if-running attach: exit %d\n%s", code, out)
	}
	out, code := runBinary(t, "starter", env, append(start, "--if-running", "attach")...)
	if code != 0 || !strings.Contains(out, "joined the open workflow ralph-attach") {
		t.Fatalf("start --if-running attach: exit %d\n%s", code, out)
	}
	var st workflows.Status
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):strings.LastIndex(out, "}")+1]), &st); err != nil || st.MaxRounds != 2 || st.Objective != "log dates" {
		t.Fatalf("the joined run's status: %v\n%s", err, out)
	}
	if out, code := runBinary(t, "starter", env, "extend", "ralph-attach", "--max-rounds", "1"); code != 1 || !strings.Contains(out, "maxRounds: 1 is lower than the run's 2") {
		t.Fatalf("extend lower: exit %d\n%s", code, out)
	}
	if out, code := runBinary(t, "starter", env, "extend", "ralph-attach", "--max-rounds", "3"); code != 0 || !strings.Contains(out, `"phase"`) {
		t.Fatalf("extend: exit %d\n%s", code, out)
	}
	out, code = runBinary(t, "starter", env, "run", "--workspace", "attach", "--objective", "log dates", "--if-running", "attach")
	if code != 4 || !strings.Contains(out, "The 3-round limit was reached with work remaining.") {
		t.Fatalf("run --if-running attach: exit %d, want the joined run's result after the extended 3 rounds\n%s", code, out)
	}
	runs, err := temporalCLI(t, "workflow", "count", "--query", "WorkflowId='ralph-attach'")
	if err != nil || !strings.Contains(runs, "Total: 1") {
		t.Fatalf("runs of ralph-attach: %v\n%s", err, runs)
	}
}

// A 429 during the review defers it: the run waits (phase waiting) and the
// review runs again; the verified completion is approved, not failed.
func TestRealStackReviewDeferredBy429(t *testing.T) {
	t.Parallel()
	var reviews atomic.Int32 // review sessions begun
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.IsReview() {
			if tn.Step() == 0 && reviews.Add(1) == 1 {
				return fakeopenai.RateLimited("61")
			}
			return fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "done is done"}))
		}
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "done.txt", "content": "done\n"})
		}
		return submit(completeArgs("done.txt written", "done.txt exists"))
	}), "RALPH_REVIEW=on")
	e.startWorker()
	const id = "review-429"
	run := e.start(id, `{"objective":"write done.txt","workspace":"review-429"}`)
	e.waitPhase(id, "waiting", 60*time.Second)
	if st := e.status(id); st.WaitReason != "rate-limited" || st.Round != 1 {
		t.Fatalf("status while the review waits: %+v", st)
	}
	res, err := e.result(run)
	if err != nil || res.Status != report.OutcomeComplete || res.Review == nil || res.Review.Verdict != "approve" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// A paused run whose time budget runs out ends at the deadline, not at a
// resume that never comes.
func TestRealStackPausePastTheDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 && len(tn.Chat.Tools) > 1 {
			return tool("run_command", map[string]any{"command": "sleep 5; date >> log.txt"})
		}
		return submit(continueArgs("logged", "log again"))
	}))
	e.startWorker()
	const id = "pause-deadline"
	started := time.Now()
	run := e.start(id, `{"objective":"log dates","workspace":"pause-deadline","maxMinutes":1}`)
	// The pause is meant for a round in flight: an update that reaches the
	// run's first workflow task pauses it before round 1 (CI saw that once).
	if err := wait.For(context.Background(), 30*time.Second, 50*time.Millisecond, func(context.Context) error {
		if st := e.status(id); st.Round < 1 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}); err != nil {
		t.Fatalf("round 1 never started: %v", err)
	}
	if out, err := temporalCLI(t, "workflow", "update", "execute", "--workflow-id", id, "--name", "pause"); err != nil {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	res, err := e.result(run)
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != "time" || res.RoundsStarted != 1 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if took := time.Since(started); took > 75*time.Second {
		t.Fatalf("the paused run closed %s after its start, want at its one-minute deadline", took)
	}
}

// The recurring loop of docs/operations.md: `temporal schedule create` with
// overlap policy Skip starts Ralph on a fixed workspace; one triggered
// action runs to its result.
func TestRealStackScheduledStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "nightly.txt", "content": "checked\n"})
		}
		return submit(completeArgs("nightly check done", "nightly.txt written"))
	}))
	e.startWorker()
	const sid = "nightly-myrepo"
	out, err := temporalCLI(t, "schedule", "create", "--schedule-id", sid, "--interval", "24h", "--overlap-policy", "Skip",
		"--workflow-id", "ralph-nightly-myrepo", "--type", "Ralph", "--task-queue", e.queue,
		"--input", `{"objective":"run the nightly checks","workspace":"myrepo","maxMinutes":120}`)
	if err != nil {
		t.Fatalf("temporal schedule create: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = temporalCLI(t, "schedule", "delete", "--schedule-id", sid) })
	if out, err := temporalCLI(t, "schedule", "trigger", "--schedule-id", sid); err != nil {
		t.Fatalf("temporal schedule trigger: %v\n%s", err, out)
	}
	h := e.client.ScheduleClient().GetHandle(context.Background(), sid)
	var wid, rid string
	err = wait.For(context.Background(), time.Minute, 200*time.Millisecond, func(ctx context.Context) error {
		d, err := h.Describe(ctx)
		if err != nil {
			return err
		}
		if len(d.Info.RecentActions) == 0 {
			return errors.New("no action yet")
		}
		wid, rid = d.Info.RecentActions[0].StartWorkflowResult.WorkflowID, d.Info.RecentActions[0].StartWorkflowResult.FirstExecutionRunID
		return nil
	})
	if err != nil {
		t.Fatalf("the schedule started nothing: %v", err)
	}
	res, err := e.result(e.client.GetWorkflow(context.Background(), wid, rid))
	if err != nil || res.Status != report.OutcomeComplete || !strings.HasPrefix(wid, "ralph-nightly-myrepo") {
		t.Fatalf("scheduled run %s: %+v, %v", wid, res, err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "myrepo", "nightly.txt")); err != nil {
		t.Fatalf("the scheduled run did not work in the schedule's workspace: %v", err)
	}
}

// With RALPH_GIT=off there is no checkpoint to restore: rewind refuses
// (exit 2, naming RALPH_GIT) unless --keep-workspace says the files may stay.
func TestRealStackRewindWithoutGitNeedsKeepWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 && len(tn.Chat.Tools) > 1 {
			return tool("run_command", map[string]any{"command": "sleep 2; date >> log.txt"})
		}
		return submit(continueArgs("logged", "log again"))
	}), "RALPH_GIT=off", "RALPH_MAX_IDLE_ROUNDS=100")
	e.startWorker()
	const id = "rewind-no-git"
	e.start(id, `{"objective":"log dates","workspace":"rewind-no-git","maxRounds":6}`)
	if err := wait.For(context.Background(), time.Minute, 200*time.Millisecond, func(context.Context) error {
		if st := e.status(id); st.Round < 3 {
			return errors.New("before round 3")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	env := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	out, code := runBinary(t, "starter", env, "rewind", id, "--round", "1")
	if code != 2 || !strings.Contains(out, "RALPH_GIT=off") || !strings.Contains(out, "--keep-workspace") {
		t.Fatalf("rewind without git: exit %d, want 2 naming RALPH_GIT\n%s", code, out)
	}
	if out, code := runBinary(t, "starter", env, "rewind", id, "--round", "1", "--keep-workspace"); code != 0 {
		t.Fatalf("rewind --keep-workspace: exit %d\n%s", code, out)
	}
	res, err := e.result(e.client.GetWorkflow(context.Background(), id, ""))
	if err != nil || res.Status != report.OutcomeBudgetLimited {
		t.Fatalf("the rewound run: %+v, %v", res, err)
	}
}

// A cancelled round's usage (what it had spent when the cancel reached it)
// counts in the run's usage: the status after the cancel shows it.
func TestRealStackCancelledRoundUsageCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		r := tool("run_command", map[string]any{"command": "echo started > started.txt; sleep 120"})
		r.Usage = &openai.Usage{PromptTokens: 700, CompletionTokens: 20}
		return r
	}))
	e.startWorker()
	const id = "cancelled-usage"
	run := e.start(id, `{"objective":"sleep","workspace":"cancelled-usage"}`)
	waitForFile(t, filepath.Join(e.root, "cancelled-usage", "started.txt"), time.Minute)
	if err := e.client.CancelWorkflow(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.result(run); err == nil {
		t.Fatal("the cancelled run completed")
	}
	if st := e.status(id); st.Outcome != "cancelled" || st.Usage.PromptTokens != 700 || st.Usage.ModelCalls != 1 {
		t.Fatalf("status after the cancel: outcome %q, usage %+v; want the round's 700 prompt tokens", st.Outcome, st.Usage)
	}
}
