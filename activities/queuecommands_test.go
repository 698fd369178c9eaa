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

// A merge onto an integration head this worker wrote asks git nothing about
// the history (the task's merge does not give the head's tree back, so the
// task is not in it): 6 commands (fetch, merge-tree, ls-tree, checkout,
// diff, push; the worker writes the merge commit itself). A task whose commit changes nothing the
// head lacks gives the head's tree back; it is asked about, found not
// merged, and merged all the same, as git merge --no-ff would.
func TestMergeOntoItsOwnMergeSkipsTheHistoryQuery(t *testing.T) {
	r := newRemoteCampaign(t)
	first, err := r.merge(t, "c", "true", r.task(t, "c", "a", map[string]string{"a.txt": "a\n"}))
	if err != nil || first.Outcome != activities.MergeLanded {
		t.Fatalf("first merge: %+v, %v", first, err)
	}
	b := r.task(t, "c", "b", map[string]string{"b.txt": "b\n"})
	var second activities.MergeTaskOutput
	cmds := gitCommands(func() { second, err = r.merge(t, "c", "true", b) })
	if err != nil || second.Outcome != activities.MergeLanded || second.Merged[0].Already {
		t.Fatalf("second merge: %+v, %v", second, err)
	}
	joined := strings.Join(cmds, "\n")
	if strings.Contains(joined, "merge-base") || strings.Contains(joined, "commit-tree") || len(cmds) != 6 {
		t.Fatalf("a merge onto the worker's own merge ran %d git commands, want 6, no merge-base and no commit-tree:\n%s", len(cmds), joined)
	}

	// An empty commit on the base: its merge is the head's tree.
	gitSetup(t, r.work, "checkout", "-q", "--detach", r.base)
	gitSetup(t, r.work, "commit", "-q", "--allow-empty", "-m", "nothing new")
	ws := activities.TaskWorkspace("c", "e")
	gitSetup(t, r.work, "push", "-q", r.bare, "HEAD:refs/heads/"+gitws.Branch(ws))
	e := activities.CampaignTask{ID: "e", Workspace: ws, Commit: gitSetup(t, r.work, "rev-parse", "HEAD"), Go: 1}
	third, err := r.merge(t, "c", "true", e)
	if err != nil || third.Outcome != activities.MergeLanded || third.Merged[0].Already || third.Head == second.Head {
		t.Fatalf("merge of a task that changes nothing: %+v, %v; want a new merge landed", third, err)
	}
	parents := gitSetup(t, r.work, "--git-dir="+r.bare, "log", "-1", "--format=%P", "integration-c")
	if parents != second.Head+" "+e.Commit {
		t.Fatalf("the no-change merge's parents are %q, want the old head and the task's commit", parents)
	}
	// And merging b again finds it merged.
	again, err := r.merge(t, "c", "true", b)
	if err != nil || again.Outcome != activities.MergeLanded || !again.Merged[0].Already || again.Head != third.Head {
		t.Fatalf("merging b again: %+v, %v; want it found already merged", again, err)
	}
}
