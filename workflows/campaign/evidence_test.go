package campaign

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
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
	limits := campaignLimits()
	limits.CampaignEvidence = true
	env := newCampaignEnv(limits)
	command := "make check " + strings.Repeat("--flag=value ", 38) // ~500 characters
	output := strings.Repeat("compiling module\n", 300) + "FAIL: TestMergedTree (the end of the output)"
	var mu sync.Mutex
	merges := 0
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		merges++
		if merges == 1 {
			return activities.MergeTaskOutput{Outcome: activities.MergeRed, Head: "h",
				Verification: &report.Verification{Command: in.VerifyCommand, ExitCode: 2, Output: output}}, nil
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "h2", Verification: &report.Verification{Command: in.VerifyCommand},
			Merged: []activities.MergedTask{{ID: "a", Commit: "m"}}}, nil
	}, activity.RegisterOptions{Name: activities.MergeTaskName})
	starts := map[string]*report.Report{}
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
		mu.Lock()
		starts[workflow.GetInfo(ctx).WorkflowExecution.ID] = start.PreviousReport
		mu.Unlock()
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	}, workflow.RegisterOptions{Name: workflows.WorkflowName})
	in, _ := json.Marshal(map[string]any{"tasks": []map[string]string{{"id": "a", "objective": "a"}}, "verifyCommand": command})
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(in), (*CampaignContinuation)(nil))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
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
