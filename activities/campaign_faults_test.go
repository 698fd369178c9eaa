package activities_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// localCampaign is a local-mode worker without a sandbox (the verify
// commands here are the test's own).
func localCampaign(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, readsOnly(), context.Background(), func(c *activities.Config) {
		c.Git.Mode, c.Sandbox.Mode = gitws.ModeLocal, sandbox.ModeOff
	})
}

// merge runs MergeTask and decodes its output.
func merge(t *testing.T, f *fixture, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
	t.Helper()
	val, err := f.env.ExecuteActivity(activities.MergeTaskName, in)
	if err != nil {
		return activities.MergeTaskOutput{}, err
	}
	var out activities.MergeTaskOutput
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

// integration is git's view of the campaign's integration branch.
func integration(t *testing.T, f *fixture, args ...string) string {
	t.Helper()
	return gitSetup(t, filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "integration.git"), args...)
}

// deleteBranch deletes task's branch in its workspace (its HEAD detached).
func deleteBranch(t *testing.T, f *fixture, task activities.CampaignTask) {
	t.Helper()
	dir := filepath.Join(f.cfg.WorkspaceRoot, task.Workspace)
	gitSetup(t, dir, "checkout", "-q", "--detach")
	gitSetup(t, dir, "update-ref", "-d", "refs/heads/"+gitws.Branch(task.Workspace))
}

// forcePushAway moves task's branch to a new commit beside its checkpoint:
// the branch no longer holds it.
func forcePushAway(t *testing.T, f *fixture, task activities.CampaignTask) string {
	t.Helper()
	dir := filepath.Join(f.cfg.WorkspaceRoot, task.Workspace)
	gitSetup(t, dir, "reset", "-q", "--hard", "HEAD~1")
	gitSetup(t, dir, "commit", "-q", "--allow-empty", "-m", "someone else's work")
	return gitSetup(t, dir, "rev-parse", "HEAD")
}

// TestMergeTaskLeavesFaultedTasksOut (SPEC 39, "one task's fault is one
// task's"): in a batch of four, b's branch was deleted and c's force-pushed
// away from its checkpoint. A campaign recorded before TaskFaults fails the
// whole step on b; with TaskFaults the two are named in Faults with what
// was wrong, and a and d merge and land: the integration branch holds
// their merges and files, and nothing of b or c.
func TestMergeTaskLeavesFaultedTasksOut(t *testing.T) {
	f := localCampaign(t)
	tasks := []activities.CampaignTask{taskGo(t, f, "a", "a.bin", 10), taskGo(t, f, "b", "b.bin", 10),
		taskGo(t, f, "c", "c.bin", 10), taskGo(t, f, "d", "d.bin", 10)}
	deleteBranch(t, f, tasks[1])
	moved := forcePushAway(t, f, tasks[2])
	in := activities.MergeTaskInput{Line: campLine, Tasks: tasks, VerifyCommand: "true"}

	_, err := merge(t, f, in)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeCampaignGit || !strings.Contains(app.Error(), "task b") {
		t.Fatalf("without TaskFaults: %v, want the whole step failed on b (as recorded before)", err)
	}

	in.TaskFaults = true
	out, err := merge(t, f, in)
	if err != nil {
		t.Fatalf("with TaskFaults: %v", err)
	}
	t.Logf("outcome %s; merged %+v; faults %+v", out.Outcome, out.Merged, out.Faults)
	if out.Outcome != activities.MergeLanded || len(out.Merged) != 2 || out.Merged[0].ID != "a" || out.Merged[1].ID != "d" || len(out.Faults) != 2 {
		t.Fatalf("output %+v, want a and d landed, b and c faulted", out)
	}
	if out.Faults[0].ID != "b" || !strings.Contains(out.Faults[0].Reason, "ralph/campaigns/camp/tasks/b is missing") {
		t.Fatalf("b's fault = %+v", out.Faults[0])
	}
	if out.Faults[1].ID != "c" || !strings.Contains(out.Faults[1].Reason, "is at "+moved[:12]) ||
		!strings.Contains(out.Faults[1].Reason, "no longer holds the loop's last checkpoint "+tasks[2].Commit[:12]) {
		t.Fatalf("c's fault = %+v", out.Faults[1])
	}
	if head := integration(t, f, "rev-parse", "integration"); head != out.Head {
		t.Fatalf("integration branch at %s, output head %s", head, out.Head)
	}
	files := integration(t, f, "ls-tree", "--name-only", "integration")
	if files != "a.bin\nd.bin" {
		t.Fatalf("the landed tree holds %q, want a.bin and d.bin only", files)
	}
	log := integration(t, f, "log", "--first-parent", "--format=%s", "integration")
	if !strings.HasPrefix(log, "ralph: merge task d\nralph: merge task a\n") {
		t.Fatalf("first-parent log:\n%s", log)
	}
	assertScratchGone(t, f)
}

// TestMergeTaskRetriedAfterItLanded: a merge step landed task a, its answer
// was lost, and a's branch was force-pushed away meanwhile. The retried
// step ("already merged" checked first) answers a merged by its merge
// commit, with or without TaskFaults: nothing fails, nothing merges twice.
func TestMergeTaskRetriedAfterItLanded(t *testing.T) {
	f := localCampaign(t)
	a := taskGo(t, f, "a", "a.bin", 10)
	in := activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{a}, VerifyCommand: "true"}
	first, err := merge(t, f, in)
	if err != nil || first.Outcome != activities.MergeLanded {
		t.Fatalf("first merge: %+v, %v", first, err)
	}
	forcePushAway(t, f, a)
	for _, faults := range []bool{false, true} {
		in.TaskFaults = faults
		again, err := merge(t, f, in)
		if err != nil {
			t.Fatalf("taskFaults=%v: the retried merge of a landed task failed: %v", faults, err)
		}
		if again.Outcome != activities.MergeLanded || again.Head != first.Head || len(again.Faults) != 0 || len(again.Merged) != 1 ||
			!again.Merged[0].Already || again.Merged[0].Commit != first.Merged[0].Commit {
			t.Fatalf("taskFaults=%v: retried merge %+v, want a already merged by %s", faults, again, first.Merged[0].Commit)
		}
	}
	if n := integration(t, f, "rev-list", "--count", "--merges", "integration"); n != "1" {
		t.Fatalf("the integration branch holds %s merges, want 1", n)
	}
}

// TestMergeTaskVerifiesTheHeadAlone: verifyHead runs the verify command on
// the integration head with no task merged: verified on a green head, red
// with the command's exit code and output once a landed task broke it; the
// head does not move, and a verifyHead naming tasks is refused.
func TestMergeTaskVerifiesTheHeadAlone(t *testing.T) {
	f := localCampaign(t)
	check := `if [ -e b.bin ]; then echo "b.bin breaks the build"; exit 3; fi`
	head := activities.MergeTaskInput{Line: campLine, VerifyCommand: check, VerifyHead: true}
	green, err := merge(t, f, head)
	if err != nil || green.Outcome != activities.MergeVerified || !green.Verification.Passed() {
		t.Fatalf("a green head: %+v, %v", green, err)
	}
	b := taskGo(t, f, "b", "b.bin", 10)
	if out, err := merge(t, f, activities.MergeTaskInput{Line: campLine, Tasks: []activities.CampaignTask{b}, VerifyCommand: "true"}); err != nil || out.Outcome != activities.MergeLanded {
		t.Fatalf("landing b: %+v, %v", out, err)
	}
	before := integration(t, f, "rev-parse", "integration")
	red, err := merge(t, f, head)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("red head %s: exit %d, output %q", red.Head[:12], red.Verification.ExitCode, red.Verification.Output)
	if red.Outcome != activities.MergeRed || red.Head != before || red.Verification.ExitCode != 3 ||
		!strings.Contains(red.Verification.Output, "b.bin breaks the build") || len(red.Merged) != 0 {
		t.Fatalf("a red head: %+v", red)
	}
	if after := integration(t, f, "rev-parse", "integration"); after != before {
		t.Fatalf("verifying the head moved it from %s to %s", before, after)
	}
	assertScratchGone(t, f)
	head.Tasks = []activities.CampaignTask{b}
	_, err = merge(t, f, head)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.NonRetryable() || !strings.Contains(app.Error(), "verifyHead takes no tasks") {
		t.Fatalf("verifyHead with a task: %v", err)
	}
}
