package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// campaignCheck is the campaign's verify command: no conflict marker
// anywhere, and x.txt and y.txt — each fine alone — only together when one
// of them says it is compatible (a semantic conflict git cannot see). It
// sleeps while slow-merge exists, so a test can kill a worker mid-merge.
const campaignCheck = `set -e
if grep -rq '^<<<<<<<' --exclude=check.sh .; then echo "conflict markers left"; exit 1; fi
if [ -f x.txt ] && [ -f y.txt ] && ! grep -q compatible x.txt y.txt; then echo "x and y clash: neither is compatible"; exit 3; fi
if [ -f slow-merge ] && [ -f a.txt ]; then sleep 4; fi
echo ok
`

var campaignTaskPattern = regexp.MustCompile(`TASK ([a-z0-9-]+)`)

// campaignModel plays every task's agent: a task writes its file and
// completes; c1 and c2 write the same line (the second to merge conflicts);
// x and y each pass alone and clash together; a task sent back (its
// previous report says why) fixes what the report names; blk is blocked.
func campaignModel(tn turn) fakeopenai.Response {
	prompt := tn.Prompt()
	m := campaignTaskPattern.FindStringSubmatch(prompt)
	if m == nil {
		return fakeopenai.Text("no task in the prompt")
	}
	task := m[1]
	back := strings.Contains(prompt, "did not merge into")
	if tn.Step() > 0 {
		return submit(completeArgs("task "+task+" done", task+" wrote its file"))
	}
	switch {
	case task == "blk":
		return submit(fakeopenai.ReportArgs{Status: "blocked", Summary: "cannot start", Evidence: []string{}, NextSteps: []string{},
			Blocker: "needs a credential nobody gave"})
	case (task == "c1" || task == "c2") && back:
		return tool("write_file", map[string]string{"path": "shared.txt", "content": "line from c1\nline from c2\n"})
	case task == "c1" || task == "c2":
		return tool("write_file", map[string]string{"path": "shared.txt", "content": "line from " + task + "\n"})
	case (task == "x" || task == "y") && back:
		return tool("write_file", map[string]string{"path": task + ".txt", "content": task + " compatible\n"})
	}
	return tool("write_file", map[string]string{"path": task + ".txt", "content": task + "\n"})
}

func campaignTasks() []campaign.Task {
	obj := func(id, what string) string { return fmt.Sprintf("TASK %s: %s", id, what) }
	return []campaign.Task{
		{ID: "a", Objective: obj("a", "write a.txt")},
		{ID: "b", Objective: obj("b", "write b.txt after a"), DependsOn: []string{"a"}},
		{ID: "c1", Objective: obj("c1", "put c1's line in shared.txt")},
		{ID: "c2", Objective: obj("c2", "put c2's line in shared.txt")},
		{ID: "x", Objective: obj("x", "write x.txt")},
		{ID: "y", Objective: obj("y", "write y.txt")},
		{ID: "blk", Objective: obj("blk", "needs a credential")},
		{ID: "dep", Objective: obj("dep", "write dep.txt after blk"), DependsOn: []string{"blk"}},
	}
}

// TestRealStackCampaign runs a campaign (docs/campaigns.md) on the real stack: on a
// remote with workers on two hosts (merge batches of 1 and 3), and in local
// mode with one workspace root.
func TestRealStackCampaign(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode  string
		batch int
	}{{"remote", 1}, {"remote", 3}, {"local", 1}} {
		t.Run(fmt.Sprintf("%s-mergeBatch-%d", c.mode, c.batch), func(t *testing.T) {
			runCampaign(t, c.mode, c.batch)
		})
	}
}

func runCampaign(t *testing.T, mode string, batch int) {
	bare, person := bareRepo(t)
	testkit.WriteFiles(t, person, map[string]string{"check.sh": campaignCheck, "slow-merge": "x\n"})
	testkit.Git(t, person, "add", "check.sh", "slow-merge")
	testkit.Git(t, person, "commit", "-q", "-m", "the campaign's check")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")

	id := fmt.Sprintf("camp-%s-b%d", mode, batch)
	hosts := []string{t.TempDir(), t.TempDir()}
	host := func(i int) []string {
		return []string{"RALPH_WORKSPACE_ROOT=" + filepath.Join(hosts[i], "workspaces"), "RALPH_SESSION_DIR=" + filepath.Join(hosts[i], "sessions")}
	}
	gitEnv := []string{"RALPH_GIT=remote", "RALPH_GIT_REMOTE=" + bare}
	if mode == "local" {
		// A local campaign's integration branch lives in its own bare
		// repository, which a person seeds (here with main's check).
		hosts[1] = hosts[0]
		gitEnv = []string{"RALPH_GIT=local"}
		local := filepath.Join(hosts[0], "workspaces", "campaigns", id, "integration.git")
		testkit.Git(t, person, "clone", "-q", "--bare", bare, local)
		bare = local
	}
	e := newEnv(t, agentScript(campaignModel), append(gitEnv, "RALPH_HEARTBEAT_TIMEOUT_SECONDS=3")...)
	first := e.startWorker(host(0)...)

	three := 3
	in := campaign.CampaignInput{Tasks: campaignTasks(), MaxParallel: &three, VerifyCommand: "bash check.sh", MergeBatch: &batch}
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 10 * time.Minute,
	}, campaign.CampaignWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}

	// Kill the worker while a merge verifies (check.sh sleeps once a.txt is
	// in the tree), then let a worker on another host take over.
	waitMerging(t, e, id)
	first.kill(t)
	e.startWorker(host(1)...)

	var res campaign.CampaignResult
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	phases := map[string]string{}
	for _, tr := range res.Tasks {
		phases[tr.ID] = tr.Phase
	}
	want := map[string]string{"a": "merged", "b": "merged", "c1": "merged", "c2": "merged", "x": "merged", "y": "merged", "blk": "blocked", "dep": "blocked"}
	if res.Status != campaign.CampaignPartial || fmt.Sprint(phases) != fmt.Sprint(want) {
		t.Fatalf("result = %+v, want partial with phases %v", res, want)
	}
	st := campaignStatus(t, e, id)
	byID := map[string]campaign.TaskStatus{}
	for _, ts := range st.Tasks {
		byID[ts.ID] = ts
	}
	if byID["dep"].Go != 0 || !strings.Contains(byID["dep"].LastFailure, "dependency blk") {
		t.Errorf("dep = %+v, want blocked by blk without starting", byID["dep"])
	}
	// One of c1/c2 conflicted and merged on its second go; one of x/y failed
	// the verify after the merge and merged on its second go.
	for _, pair := range [][2]string{{"c1", "c2"}, {"x", "y"}} {
		a, b := byID[pair[0]], byID[pair[1]]
		if a.MergeAttempts+b.MergeAttempts != 1 || a.Go+b.Go != 3 {
			t.Errorf("%s and %s: merge attempts %d+%d, goes %d+%d; want one sent back once", pair[0], pair[1], a.MergeAttempts, b.MergeAttempts, a.Go, b.Go)
		}
	}
	red := 0
	for _, v := range st.Verifies {
		if !v.Passed {
			red++
		}
	}
	if red == 0 {
		t.Errorf("no red verify recorded: %+v", st.Verifies)
	}

	// The integration branch: each task merged exactly once, the head
	// passes the check, and every go's commits are reachable.
	check := t.TempDir()
	testkit.Git(t, check, "clone", "-q", "--mirror", bare, ".git")
	testkit.Git(t, check, "config", "--bool", "core.bare", "false")
	testkit.Git(t, check, "checkout", "-q", "-f", res.Head)
	if got := testkit.Git(t, check, "rev-parse", "ralph/campaigns/"+id+"/integration"); got != res.Head {
		t.Fatalf("integration branch at %s, result head %s", got, res.Head)
	}
	log := testkit.Git(t, check, "log", "--first-parent", "--format=%s", res.Head)
	for _, task := range []string{"a", "b", "c1", "c2", "x", "y"} {
		if n := strings.Count(log+"\n", "ralph: merge task "+task+"\n"); n != 1 {
			t.Errorf("task %s merged %d times on the integration branch:\n%s", task, n, log)
		}
	}
	cmd := exec.Command("bash", "check.sh")
	cmd.Dir = check
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the integration head fails the check: %v\n%s", err, out)
	}
	// Every go's round commits are on its task's branch: on the remote, or
	// in local mode in the task's workspace, where its loops committed.
	recordCampaign(t, e, id, st)
	for _, ts := range st.Tasks {
		repo := check
		if mode == "local" {
			repo = filepath.Join(hosts[0], "workspaces", activities.TaskWorkspace(id, ts.ID))
		}
		for _, commit := range roundCommits(t, e, id, ts) {
			cmd := exec.Command("git", "merge-base", "--is-ancestor", commit, ts.Branch)
			cmd.Dir = repo
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("task %s: round commit %s is not on %s in %s: %v %s", ts.ID, commit, ts.Branch, repo, err, out)
			}
		}
	}
}

// waitMerging waits until a MergeTask of the campaign is running a verify
// that sleeps (a.txt merged, slow-merge on the branch).
func waitMerging(t *testing.T, e *env, id string) {
	t.Helper()
	err := wait.For(context.Background(), 3*time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
		d, err := e.client.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return err
		}
		for _, pa := range d.RawResponse.GetPendingActivities() {
			if pa.GetActivityType().GetName() == activities.MergeTaskName && pa.GetAttempt() == 1 && pa.GetLastStartedTime() != nil {
				return nil
			}
		}
		return errors.New("no MergeTask running")
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // into the verify
}

func campaignStatus(t *testing.T, e *env, id string) campaign.CampaignStatus {
	t.Helper()
	v, err := e.client.QueryWorkflow(context.Background(), id, "", workflows.StatusQueryName)
	if err != nil {
		t.Fatalf("query %s: %v", id, err)
	}
	var st campaign.CampaignStatus
	if err := v.Get(&st); err != nil {
		t.Fatal(err)
	}
	// The summary lists active and failing tasks; the tasks query pages
	// them all.
	st.Tasks = nil
	for after := ""; ; {
		v, err := e.client.QueryWorkflow(context.Background(), id, "", campaign.QueryTasks, campaign.TasksRequest{After: after})
		if err != nil {
			t.Fatalf("query %s tasks: %v", id, err)
		}
		var page campaign.TasksPage
		if err := v.Get(&page); err != nil {
			t.Fatal(err)
		}
		st.Tasks = append(st.Tasks, page.Tasks...)
		if after = page.Next; after == "" {
			return st
		}
	}
}

// roundCommits lists the checkpoint of every round of every go of a task.
func roundCommits(t *testing.T, e *env, id string, ts campaign.TaskStatus) []string {
	t.Helper()
	var commits []string
	for g := 1; g <= ts.Go; g++ {
		wid := id + "/" + ts.ID
		if g > 1 {
			wid = fmt.Sprintf("%s/%d", wid, g)
		}
		outs := roundOutputs(t, e, wid)
		if len(outs) == 0 {
			t.Errorf("%s ran no round", wid)
		}
		for _, out := range outs {
			if out.Checkpoint != nil {
				commits = append(commits, out.Checkpoint.Commit)
			}
		}
	}
	return commits
}

// recordCampaign writes the campaign's history and those of its tasks'
// later goes (a Ralph run started with a campaign's report) into
// $RALPH_RECORD_HISTORIES, for the replay corpus (docs/testing.md).
func recordCampaign(t *testing.T, e *env, id string, st campaign.CampaignStatus) {
	ids := []string{id}
	for _, ts := range st.Tasks {
		if ts.Go > 1 {
			ids = append(ids, ts.WorkflowID)
		}
	}
	recordHistories(t, e, ids...)
}

// recordHistories writes the histories of the runs ids into
// $RALPH_RECORD_HISTORIES (nothing when unset), for the replay corpus
// (docs/testing.md).
func recordHistories(t *testing.T, e *env, ids ...string) {
	dir := os.Getenv("RALPH_RECORD_HISTORIES")
	if dir == "" {
		return
	}
	for _, wid := range ids {
		hist := &historypb.History{}
		iter := e.client.GetWorkflowHistory(context.Background(), wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, ev)
		}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.ReplaceAll(wid, "/", "-") + ".json"
		if err := os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
