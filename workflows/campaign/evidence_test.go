package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// TestReturnedTaskSeesTheVerifyOutputOfALongCommand: a 500-character verify
// command fails on the merged tree; the task's next go starts from a report
// whose summary names the failure in one sentence (the command shortened)
// and whose evidence holds the exit code and the output's last 2,000+
// characters, its end included.
func TestReturnedTaskSeesTheVerifyOutputOfALongCommand(t *testing.T) {
	limits := queueApartLimits()
	limits.CampaignEvidence = true
	env := newCampaignEnv(limits)
	command := "make check " + strings.Repeat("--flag=value ", 38) // ~500 characters
	output := strings.Repeat("compiling module\n", 300) + "FAIL: TestMergedTree (the end of the output)"
	var mu sync.Mutex
	merges := 0
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		merges++
		if merges == 1 {
			return activities.MergeTaskOutput{Outcome: activities.MergeRed, Head: "h",
				Verification: &report.Verification{Command: in.VerifyCommand, ExitCode: 2, Output: output}}, nil
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "h2", Verification: &report.Verification{Command: in.VerifyCommand},
			Merged: []activities.MergedTask{{ID: "a", Commit: "m"}}}, nil
	})
	starts := map[string]*report.Report{}
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
		mu.Lock()
		starts[workflow.GetInfo(ctx).WorkflowExecution.ID] = start.PreviousReport
		mu.Unlock()
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	in, _ := json.Marshal(map[string]any{"tasks": []map[string]string{{"id": "a", "objective": "a"}}, "verifyCommand": command})
	runCampaign(t, env, string(in))
	back := starts["camp/a/2"]
	if back == nil {
		t.Fatalf("no second go: %v", starts)
	}
	if err := report.Validate(*back, limits.MaxHandoffChars); err != nil {
		t.Fatalf("the back report is invalid: %v", err)
	}
	if strings.Count(back.Summary, ".") > 2 || !strings.Contains(back.Summary, "exited 2") || !strings.Contains(back.Summary, "make check --flag=value") ||
		!strings.Contains(back.Summary, "…") || strings.Contains(back.Summary, command) {
		t.Fatalf("summary = %q", back.Summary)
	}
	if len(back.Evidence) != 2 || back.Evidence[0] != "exit code 2" || !strings.HasSuffix(back.Evidence[1], "FAIL: TestMergedTree (the end of the output)") ||
		len([]rune(back.Evidence[1])) < minTailChars {
		t.Fatalf("evidence = %q", back.Evidence)
	}
	t.Logf("summary %d characters, evidence tail %d characters", len(back.Summary), len([]rune(back.Evidence[1])))
}

// TestGitFailureRetriesThenPausesTheQueue: a merge step that keeps failing
// for a reason that is not the task's (here: the remote unreachable) is
// retried for RALPH_MERGE_RETRY_MINUTES, then the queue pauses (phase
// paused, pauseReason, a paused notification) without failing the task;
// resume retries the merge, which lands.
func TestGitFailureRetriesThenPausesTheQueue(t *testing.T) {
	limits := queueApartLimits()
	limits.MergeRetryMinutes = 30
	limits.NotifyEvents = []string{EventPaused}
	env := newCampaignEnv(limits)
	var mu sync.Mutex
	attempts, remoteBack := 0, false
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if !remoteBack {
			return activities.MergeTaskOutput{}, errors.New("fetch from origin: could not resolve host")
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "h2", Merged: []activities.MergedTask{{ID: "a", Commit: "m"}}}, nil
	})
	var events []string
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	onNotify(env, func(in activities.NotifyInput) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, in.Event+": "+in.Text)
	})
	var paused CampaignStatus
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.StatusQueryName)
		if err == nil {
			err = v.Get(&paused)
		}
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		remoteBack = true
		mu.Unlock()
	}, 2*time.Hour)
	resume := sendUpdate(env, 2*time.Hour+time.Minute, workflows.UpdateResume)
	res := runCampaign(t, env, `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check"}`)
	if paused.Phase != workflows.PhasePaused || !strings.Contains(paused.PauseReason, "could not resolve host") ||
		paused.Counts[TaskQueued] != 1 || paused.Counts[TaskFailed] != 0 {
		t.Fatalf("status while paused: %+v", paused)
	}
	if resume.rejected != nil || res.Status != CampaignComplete || res.Tasks[0].Phase != TaskMerged {
		t.Fatalf("resume %+v; result %+v", resume, res)
	}
	if len(events) != 1 || !strings.HasPrefix(events[0], "paused: ") || attempts < 10 {
		t.Fatalf("events %v after %d attempts", events, attempts)
	}
	t.Logf("%d attempts in the retry window; %s", attempts, events[0])
}

// TestApprovalWaitHoldsOnlyItsTask: with approve merge, a held merge waits
// beside the queue (notified once): the other tasks start, run and merge
// meanwhile; then approve lands it, the timeout ends the wait, or a stop
// does, the held merge left on its ref.
func TestApprovalWaitHoldsOnlyItsTask(t *testing.T) {
	for _, end := range []string{"approve", "timeout", "stop"} {
		t.Run(end, func(t *testing.T) {
			limits := queueApartLimits()
			limits.CampaignHeldApart = true
			limits.NotifyEvents = []string{workflows.EventAwaitingApproval}
			if end == "timeout" {
				limits.ApprovalTimeoutHours = 1
			}
			env := newCampaignEnv(limits)
			var mu sync.Mutex
			var landed, events []string
			onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
				mu.Lock()
				defer mu.Unlock()
				id := in.Tasks[0].ID
				if id == "a" && in.Land == "" {
					return activities.MergeTaskOutput{Outcome: activities.MergeHeld, Head: "h", Tip: "tip-a", DiffStat: "a.txt | 1 +"}, nil
				}
				landed = append(landed, id)
				return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "head-" + id, Merged: []activities.MergedTask{{ID: id, Commit: "m-" + id}}}, nil
			})
			onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
				if err := workflow.Sleep(ctx, time.Minute); err != nil {
					return nil, err
				}
				return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
			})
			onNotify(env, func(in activities.NotifyInput) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, in.Event)
			})
			var during CampaignStatus
			env.RegisterDelayedCallback(func() {
				v, err := env.QueryWorkflow(workflows.StatusQueryName)
				if err == nil {
					err = v.Get(&during)
				}
				if err != nil {
					t.Error(err)
				}
			}, 30*time.Minute)
			var answer *updateResult
			switch end {
			case "approve":
				answer = sendUpdate(env, 2*time.Hour, workflows.UpdateApprove, TaskRequest{Task: "a"})
			case "stop":
				answer = sendUpdate(env, 2*time.Hour, workflows.UpdateStop, workflows.StopRequest{Reason: "later"})
			}
			in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"},{"id":"c","objective":"c"}],"verifyCommand":"check","maxParallel":1,"approve":"merge"}`
			res := runCampaign(t, env, in)
			// While a waited, b and c ran and merged.
			if during.Counts[TaskAwaitingApproval] != 1 || during.Counts[TaskMerged] != 2 || fmt.Sprint(events) != "[awaiting-approval]" {
				t.Fatalf("at 30 minutes: %v; events %v", during.Counts, events)
			}
			if answer != nil && answer.rejected != nil {
				t.Fatal(answer.rejected)
			}
			a := res.Tasks[0]
			switch end {
			case "approve":
				if fmt.Sprint(landed) != "[b c a]" || res.Status != CampaignComplete || a.Phase != TaskMerged {
					t.Fatalf("landed %v; result %+v", landed, res)
				}
			case "timeout":
				if a.Phase != TaskCancelled || !strings.Contains(a.LastFailure, "after 1 hours") || !strings.Contains(a.LastFailure, "refs/ralph/campaigns/camp/held/a/1-1") {
					t.Fatalf("result %+v", res)
				}
			case "stop":
				if a.Phase != TaskCancelled || res.Status != CampaignStopped || !strings.Contains(a.LastFailure, "stopped while the merge awaited approval") {
					t.Fatalf("result %+v", res)
				}
			}
		})
	}
}
