package campaign

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// A task whose tree the merge refused (section 38: too big, git killed on
// it) goes back with the named reason like a conflicting one, and after
// maxMergeAttempts it is blocked: the merge is not retried for ever.
func TestCampaignSendsBackARefusedTaskTree(t *testing.T) {
	env := newCampaignEnv(queueApartLimits())
	merges := 0
	const why = "tree too big (RALPH_WORKSPACE_MAX_MB): task a's commit 1a2b holds more than 16 MB of files"
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		merges++
		return activities.MergeTaskOutput{Outcome: activities.MergeRefused, Head: "h", ConflictTask: in.Tasks[0].ID, Refused: why}, nil
	})
	var backs []string
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, start *workflows.TaskStart) (*workflows.Result, error) {
		if start != nil && start.PreviousReport != nil {
			backs = append(backs, start.PreviousReport.Summary)
		}
		rep := completeReport(1)
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	in := `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check","maxMergeAttempts":3}`
	res := runCampaign(t, env, in)
	wantLast := "did not merge after 3 attempts; the last: merging into ralph/campaigns/camp/integration was refused: " + why
	if merges != 3 || len(res.Tasks) != 1 || res.Tasks[0].Phase != TaskBlocked || res.Tasks[0].LastFailure != wantLast {
		t.Fatalf("after %d merges: %+v, want task a blocked after 3 with %q", merges, res.Tasks, wantLast)
	}
	if len(backs) != 2 || !strings.Contains(backs[0], "was refused: "+why) {
		t.Fatalf("the task's next loops started from %q, want the refusal named", backs)
	}
}
