package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// historiesDir holds histories recorded from real dev-server runs
// (`make histories`; see CONTRIBUTING.md before adding or re-recording any).
const historiesDir = "testdata/histories"

// TestReplayRecordedHistories replays every checked-in history against the
// current workflow code: a change that breaks determinism fails here.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Histories of later versions live in a directory each.
	later, err := filepath.Glob(filepath.Join(historiesDir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, later...)
	if len(files) == 0 {
		t.Fatalf("no recorded histories in %s", historiesDir)
	}
	for _, file := range files {
		name, _ := filepath.Rel(historiesDir, file)
		t.Run(name, func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			replayer.RegisterWorkflowWithOptions(Ralph, workflow.RegisterOptions{Name: WorkflowName})
			if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, file); err != nil {
				t.Fatalf("replay %s: %v", file, err)
			}
		})
	}
}

// TestReplayDetectsNonDeterminism proves the harness can fail: a workflow
// that schedules a different activity than the recorded one must not replay.
func TestReplayDetectsNonDeterminism(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if len(files) == 0 {
		t.Fatalf("no recorded histories in %s", historiesDir)
	}
	changed := func(ctx workflow.Context, _ []byte, _ *Continuation) (*Result, error) {
		ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: resolveLimitsTimeout})
		return nil, workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 1}), "SomethingElse").Get(ctx, nil)
	}
	replayer := worker.NewWorkflowReplayer()
	replayer.RegisterWorkflowWithOptions(changed, workflow.RegisterOptions{Name: WorkflowName})
	if err := replayer.ReplayWorkflowHistoryFromJSONFile(nil, files[0]); err == nil {
		t.Fatalf("a changed workflow replayed %s without a non-determinism error", files[0])
	}
}
