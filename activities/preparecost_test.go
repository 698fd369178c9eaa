package activities_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

// gitCommands records the git commands of the worker while f runs.
func gitCommands(f func()) []string {
	var mu sync.Mutex
	var cmds []string
	stop := gitws.Trace(func(c gitws.TracedCommand) {
		mu.Lock()
		defer mu.Unlock()
		cmds = append(cmds, strings.Join(c.Args, " "))
	})
	defer stop()
	f()
	return cmds
}

func (r *remoteCampaign) prepare(t *testing.T, task activities.CampaignTask) activities.PrepareTaskOutput {
	t.Helper()
	val, err := r.f.env.ExecuteActivity(activities.PrepareTaskName, activities.PrepareTaskInput{
		Line: activities.CampaignLine{Campaign: "c", Branch: "integration-c"}, Task: task})
	var out activities.PrepareTaskOutput
	if err == nil {
		err = val.Get(&out)
	}
	if err != nil {
		t.Fatalf("PrepareTask of %s: %v", task.ID, err)
	}
	return out
}

// A task's first go on the remote creates its branch at the integration
// head with one fetch and one push (no fetch of the branch it expects not
// to find), and a first go retried after the branch exists leaves it where
// it is (here: where the task's loop moved it) and reports that head.
func TestPrepareTaskFirstGoCreatesTheBranchOnce(t *testing.T) {
	r := newRemoteCampaign(t)
	task := activities.CampaignTask{ID: "a", Workspace: activities.TaskWorkspace("c", "a"), Go: 1}
	r.prepare(t, task) // creates integration-c (a first step does more)
	task2 := activities.CampaignTask{ID: "b", Workspace: activities.TaskWorkspace("c", "b"), Go: 1}
	var out activities.PrepareTaskOutput
	cmds := gitCommands(func() { out = r.prepare(t, task2) })
	branch := gitws.Branch(task2.Workspace)
	if got := gitSetup(t, r.work, "ls-remote", r.bare, "refs/heads/"+branch); !strings.HasPrefix(got, out.IntegrationHead+"\t") {
		t.Fatalf("the remote's %s is %q, want the integration head %s", branch, got, out.IntegrationHead)
	}
	if out.TaskHead != out.IntegrationHead || out.IntegrationHead != r.base {
		t.Fatalf("PrepareTask = %+v, want both heads at the base %s", out, r.base)
	}
	var fetches, pushes int
	for _, c := range cmds {
		fetches += strings.Count(" "+c, " fetch ")
		pushes += strings.Count(" "+c, " push ")
	}
	if len(cmds) != 2 || fetches != 1 || pushes != 1 {
		t.Fatalf("a first go ran %d git commands, want one fetch and one push:\n%s", len(cmds), strings.Join(cmds, "\n"))
	}

	// The task's loop moves its branch; the first go, retried, keeps it.
	moved := r.task(t, "c", "b", map[string]string{"b.txt": "the loop's work\n"})
	again := r.prepare(t, task2)
	if again.TaskHead != moved.Commit || again.IntegrationHead != r.base {
		t.Fatalf("a retried first go = %+v, want the task head %s kept", again, moved.Commit)
	}
	if got := gitSetup(t, r.work, "ls-remote", r.bare, "refs/heads/"+branch); !strings.HasPrefix(got, moved.Commit+"\t") {
		t.Fatalf("a retried first go moved %s to %q, want %s", branch, got, moved.Commit)
	}
}
