package activities_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// gitSetup runs the test's own git in dir.
func gitSetup(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

var campLine = activities.CampaignLine{Campaign: "camp", Branch: "integration"}

// campaignFixture is a local-mode worker whose workspaces are bounded to
// 16 MB, and task a's first go, whose commit holds a sparse file of size
// bytes.
func campaignFixture(t *testing.T, size int64) (*fixture, activities.MergeTaskInput) {
	t.Helper()
	f := newFixture(t, readsOnly(), context.Background(), func(c *activities.Config) {
		c.Git.Mode, c.Sandbox.Mode, c.Sandbox.WorkspaceMaxMB = gitws.ModeLocal, sandbox.ModeOff, 16
	})
	return f, activities.MergeTaskInput{Line: campLine,
		Tasks: []activities.CampaignTask{taskGo(t, f, "a", "big.bin", size)}, VerifyCommand: "true"}
}

// taskGo is task id's first go: its branch made at the integration head by
// PrepareTask (whose scratch clone is gone after), and a commit on it of a
// sparse file name of size bytes.
func taskGo(t *testing.T, f *fixture, id, name string, size int64) activities.CampaignTask {
	t.Helper()
	ws := activities.TaskWorkspace("camp", id)
	if _, err := f.env.ExecuteActivity(activities.PrepareTaskName, activities.PrepareTaskInput{Line: campLine,
		Task: activities.CampaignTask{ID: id, Workspace: ws, Go: 1}}); err != nil {
		t.Fatalf("PrepareTask: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "prepare-"+id)); !os.IsNotExist(err) {
		t.Fatalf("PrepareTask left its scratch clone (%v)", err)
	}
	dir := filepath.Join(f.cfg.WorkspaceRoot, ws)
	fh, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	fh.Close()
	if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
		t.Fatal(err)
	}
	gitSetup(t, dir, "add", "-A")
	gitSetup(t, dir, "commit", "-q", "-m", "the task's work")
	return activities.CampaignTask{ID: id, Workspace: ws, Commit: gitSetup(t, dir, "rev-parse", "HEAD"), Go: 1}
}

// A later go's bring-up whose merge would pass the bound (task a's 10 MB
// onto a head that landed task b's 10 MB, bound 16 MB) fails that go with
// the non-retryable TaskTree error naming the bound, and writes nothing of
// the merge into the task's workspace.
func TestPrepareTaskRefusesABringUpOverTheBound(t *testing.T) {
	f, _ := campaignFixture(t, 1)
	a := taskGo(t, f, "a2", "a.bin", 10<<20)
	b := taskGo(t, f, "b", "b.bin", 10<<20)
	val, err := f.env.ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{Line: campLine,
		Tasks: []activities.CampaignTask{b}, VerifyCommand: "true"})
	var out activities.MergeTaskOutput
	if err != nil || val.Get(&out) != nil || out.Outcome != activities.MergeLanded {
		t.Fatalf("merging task b: %+v, %v", out, err)
	}
	a.Go = 2
	_, err = f.env.ExecuteActivity(activities.PrepareTaskName, activities.PrepareTaskInput{Line: campLine, Task: a})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeTaskTree || !app.NonRetryable() ||
		!strings.Contains(app.Error(), "tree too big (RALPH_WORKSPACE_MAX_MB)") {
		t.Fatalf("PrepareTask of a's second go = %v, want a non-retryable %s naming RALPH_WORKSPACE_MAX_MB", err, activities.ErrTypeTaskTree)
	}
	if _, err := os.Lstat(filepath.Join(f.cfg.WorkspaceRoot, a.Workspace, "b.bin")); !os.IsNotExist(err) {
		t.Fatalf("the refused merge reached the task's workspace (%v)", err)
	}
	if _, err := os.Lstat(filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "prepare-a2")); !os.IsNotExist(err) {
		t.Fatalf("the failed PrepareTask left its scratch clone (%v)", err)
	}
}

// A task whose tree passes RALPH_WORKSPACE_MAX_MB (a 64 MB sparse file
// under a 16 MB bound) does not merge: the step succeeds with the task
// refused and the bound named, so Temporal does not retry it, the scratch
// clone is gone and not a byte of the tree was written outside the task's
// own workspace.
func TestMergeTaskRefusesATaskTreeOverTheBound(t *testing.T) {
	f, in := campaignFixture(t, 64<<20)
	val, err := f.env.ExecuteActivity(activities.MergeTaskName, in)
	if err != nil {
		t.Fatalf("MergeTask: %v (a task's tree is the task's fault: an outcome, not an error to retry)", err)
	}
	var out activities.MergeTaskOutput
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	if out.Outcome != activities.MergeRefused || out.ConflictTask != "a" ||
		!strings.Contains(out.Refused, "tree too big (RALPH_WORKSPACE_MAX_MB)") || !strings.Contains(out.Refused, "(16 MB)") {
		t.Fatalf("output = %+v, want task a refused naming RALPH_WORKSPACE_MAX_MB (16 MB)", out)
	}
	assertScratchGone(t, f)
	own := filepath.Join(f.cfg.WorkspaceRoot, in.Tasks[0].Workspace)
	_ = filepath.WalkDir(f.cfg.WorkspaceRoot, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "big.bin" && filepath.Dir(path) != own {
			t.Errorf("the refused tree was written out at %s", path)
		}
		return nil
	})
}

// A merge step that fails (here: the task's branch lacks the commit to
// merge) still removes its scratch clone.
func TestMergeTaskRemovesItsScratchOnFailure(t *testing.T) {
	f, in := campaignFixture(t, 1<<10)
	in.Tasks[0].Commit = strings.Repeat("1", 40)
	if _, err := f.env.ExecuteActivity(activities.MergeTaskName, in); err == nil {
		t.Fatal("MergeTask of a commit the branch lacks succeeded")
	}
	assertScratchGone(t, f)
}

func assertScratchGone(t *testing.T, f *fixture) {
	t.Helper()
	scratch := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "merge")
	if _, err := os.Lstat(scratch); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(scratch)
		t.Fatalf("the merge scratch %s is still there (%v, %d entries)", scratch, err, len(entries))
	}
}
