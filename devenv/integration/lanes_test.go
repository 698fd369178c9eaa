package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// lanesCheck is the lanes campaigns' verify command: a tree whose l2.txt
// says broken fails; while slow-merge is in the tree it sleeps, so lanes
// stack up behind a verifying one (LANES_CHECK_FAST skips the sleep when
// the test checks the landed commits afterwards).
const lanesCheck = `set -e
if [ -f slow-merge ] && [ -z "$LANES_CHECK_FAST" ]; then sleep "$(cat slow-merge)"; fi
if grep -qs broken l2.txt; then echo "l2.txt is broken"; exit 5; fi
echo ok
`

// lanesModel plays the lanes campaigns' tasks: task lN answers N-1
// seconds late (the loops end close together, in order), writes lN.txt and
// completes; l2's first go writes a file its own verify accepts and the
// campaign's verify refuses, and its next go fixes it.
func lanesModel(tn turn) fakeopenai.Response {
	m := campaignTaskPattern.FindStringSubmatch(tn.Prompt())
	if m == nil {
		return fakeopenai.Text("no task in the prompt")
	}
	task := m[1]
	if tn.Step() > 0 {
		return submit(completeArgs("task "+task+" done", task+" wrote its file"))
	}
	var n int
	fmt.Sscanf(task, "l%d", &n)
	time.Sleep(time.Duration(max(n-1, 0)) * time.Second)
	content := task + "\n"
	if task == "l2" && !strings.Contains(tn.Prompt(), "did not merge into") {
		content = "broken\n"
	}
	return tool("write_file", map[string]string{"path": task + ".txt", "content": content})
}

// lanesRepo seeds the remote with the check and slow-merge holding how long
// a verify sleeps, and returns the remote and the base commit.
func lanesRepo(t *testing.T, sleep string) (bare, base string) {
	bare, person := bareRepo(t)
	testkit.WriteFiles(t, person, map[string]string{"check.sh": lanesCheck, "slow-merge": sleep + "\n"})
	testkit.Git(t, person, "add", "check.sh", "slow-merge")
	testkit.Git(t, person, "commit", "-q", "-m", "the lanes check")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	return bare, testkit.Git(t, person, "rev-parse", "HEAD")
}

func lanesTasks(n int) []campaign.Task {
	var ts []campaign.Task
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("l%d", i)
		ts = append(ts, campaign.Task{ID: id, Objective: fmt.Sprintf("TASK %s: write %s.txt", id, id), VerifyCommand: "true"})
	}
	return ts
}

func startLanes(t *testing.T, e *env, id string, tasks, lanes int) client.WorkflowRun {
	in := campaign.CampaignInput{Tasks: lanesTasks(tasks), MaxParallel: &tasks, MergeLanes: &lanes, VerifyCommand: "bash check.sh"}
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 10 * time.Minute,
	}, campaign.CampaignWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// landedCommits checks the integration branch out of the remote and
// returns the clone and the first-parent commits from base to head.
func landedCommits(t *testing.T, bare, id, base, head string) (string, []string) {
	check := t.TempDir()
	testkit.Git(t, check, "clone", "-q", "-b", "ralph/campaigns/"+id+"/integration", bare, ".")
	if got := testkit.Git(t, check, "rev-parse", "HEAD"); got != head {
		t.Fatalf("integration branch at %s, result head %s", got, head)
	}
	commits := strings.Fields(testkit.Git(t, check, "rev-list", "--first-parent", "--reverse", base+".."+head))
	return check, append([]string{base}, commits...)
}

// runCheck runs the verify command on commit in the clone.
func runCheck(t *testing.T, clone, commit string) (string, error) {
	testkit.Git(t, clone, "checkout", "-q", "--detach", commit)
	cmd := exec.Command("bash", "check.sh")
	cmd.Dir, cmd.Env = clone, append(os.Environ(), "LANES_CHECK_FAST=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mergeOrder lists the tasks merged on the first-parent log, oldest first.
func mergeOrder(t *testing.T, clone, head string) []string {
	var order []string
	for _, s := range strings.Split(testkit.Git(t, clone, "log", "--first-parent", "--reverse", "--format=%s", head), "\n") {
		if id, ok := strings.CutPrefix(s, "ralph: merge task "); ok {
			order = append(order, id)
		}
	}
	return order
}

// TestRealStackLanesRedPrefixInTheMiddle (SPEC 41, speculative lanes):
// four tasks whose loops end a second apart queue behind a verify that
// sleeps, so three lanes verify prefixes at once. l2's merged tree fails
// the verify: lane 1 (l1) lands, the lanes stacked on l2 are discarded and
// say why, l2 goes back and its next go merges, l3 and l4 land in queue
// order, and no commit on the integration branch's first-parent line fails
// the verify command.
func TestRealStackLanesRedPrefixInTheMiddle(t *testing.T) {
	t.Parallel()
	bare, base := lanesRepo(t, "3")
	e := newEnv(t, agentScript(lanesModel), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)
	e.startWorker()
	const id = "camp-lanes-red"
	run := startLanes(t, e, id, 4, 3)
	var res campaign.CampaignResult
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	st := campaignStatus(t, e, id)
	if res.Status != campaign.CampaignComplete {
		t.Fatalf("result %+v", res)
	}
	goes := map[string]int{}
	for _, ts := range st.Tasks {
		goes[ts.ID] = ts.Go
	}
	if fmt.Sprint(goes) != "map[l1:1 l2:2 l3:1 l4:1]" {
		t.Errorf("goes %v: want l2 sent back once, the others merged on their first go", goes)
	}
	// The red lane held l1 and l2 (l2 queued second), and at least one lane
	// stacked on it was discarded naming it.
	var red, discarded []campaign.MergeVerify
	for _, v := range st.Verifies {
		t.Logf("verify lane %d %v passed %v exit %d %dms discarded %q", v.Lane, v.Tasks, v.Passed, v.ExitCode, v.DurationMs, v.Discarded)
		switch {
		case v.Discarded != "":
			discarded = append(discarded, v)
		case !v.Passed:
			red = append(red, v)
		}
	}
	if len(red) != 1 || strings.Join(red[0].Tasks, ",") != "l2" || red[0].ExitCode != 5 || red[0].Lane == 0 {
		t.Errorf("red verifies %+v: want one, lane 2's l2 (exit 5)", red)
	}
	if st.VerifyDiscarded == 0 || st.VerifyDiscarded != len(discarded) || !strings.Contains(discarded[0].Discarded, "failed the verify") {
		t.Errorf("%d discarded verifies, recorded %+v", st.VerifyDiscarded, discarded)
	}
	for _, d := range discarded {
		if len(red) == 1 && (d.Lane <= red[0].Lane || d.Tasks[0] == "l1" || d.Tasks[0] == "l2") {
			t.Errorf("discarded %+v: want a lane stacked on the red lane %d", d, red[0].Lane)
		}
	}
	recordCampaign(t, e, id, st)

	// Every landed commit passes the check; l1 landed before l2 was found
	// red, l3 and l4 in queue order, l2 after its second go.
	clone, commits := landedCommits(t, bare, id, base, res.Head)
	for _, c := range commits {
		if out, err := runCheck(t, clone, c); err != nil {
			t.Errorf("commit %s on the integration branch fails the verify: %v %s", c, err, out)
		}
	}
	// l2's next go may land before or after the others; they keep their
	// queue order.
	order := mergeOrder(t, clone, res.Head)
	var others []string
	for _, o := range order {
		if o != "l2" {
			others = append(others, o)
		}
	}
	if strings.Join(others, ",") != "l1,l3,l4" || len(order) != 4 || order[0] != "l1" {
		t.Errorf("merge order %v, want l1 first, then l3 before l4, and l2 once", order)
	}
	if len(commits) != 1+len(order) {
		t.Errorf("%d first-parent commits after the base for %d merges", len(commits)-1, len(order))
	}
}

// TestRealStackLanesWorkerKilledWhileTwoVerify (SPEC 41): three lanes, a
// verify that sleeps 5 s; the only worker is killed while two lanes'
// MergeTask verifies are running, another worker takes over, and the
// campaign completes with every task merged exactly once, nothing red or
// discarded, and a head that passes the verify. (The lost verifies are
// retried once the git steps' heartbeat timeout, here 3 s, passes.)
func TestRealStackLanesWorkerKilledWhileTwoVerify(t *testing.T) {
	t.Parallel()
	bare, base := lanesRepo(t, "5")
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		m := campaignTaskPattern.FindStringSubmatch(tn.Prompt())
		if m != nil && tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": m[1] + ".txt", "content": m[1] + "\n"})
		}
		return submit(completeArgs("done", "wrote its file"))
	}), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare, "RALPH_HEARTBEAT_TIMEOUT_SECONDS=3")
	first := e.startWorker()
	const id = "camp-lanes-killed"
	run := startLanes(t, e, id, 3, 3)

	verifying := waitLanesVerifying(t, e, id, 2)
	first.kill(t)
	t.Logf("killed the worker with lanes %+v", verifying)
	e.startWorker()

	var res campaign.CampaignResult
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	if res.Status != campaign.CampaignComplete {
		t.Fatalf("result %+v", res)
	}
	st := campaignStatus(t, e, id)
	for _, v := range st.Verifies {
		t.Logf("verify lane %d %v passed %v exit %d started %s %dms discarded %q", v.Lane, v.Tasks, v.Passed, v.ExitCode, v.Started.Format("15:04:05.0"), v.DurationMs, v.Discarded)
	}
	if st.VerifyFailed != 0 || st.VerifyDiscarded != 0 || st.VerifyCount < 3 {
		t.Errorf("verifies: %d, %d red, %d discarded; want every lane's verify passed", st.VerifyCount, st.VerifyFailed, st.VerifyDiscarded)
	}
	clone, commits := landedCommits(t, bare, id, base, res.Head)
	log := testkit.Git(t, clone, "log", "--first-parent", "--format=%s", res.Head)
	for _, task := range []string{"l1", "l2", "l3"} {
		if n := strings.Count(log+"\n", "ralph: merge task "+task+"\n"); n != 1 {
			t.Errorf("task %s merged %d times on the integration branch:\n%s", task, n, log)
		}
	}
	if len(commits) != 4 {
		t.Errorf("first-parent commits after the base: %v", commits[1:])
	}
	if out, err := runCheck(t, clone, res.Head); err != nil || !strings.Contains(out, "ok") {
		t.Errorf("the integration head fails the verify: %v %s", err, out)
	}
}

// waitLanesVerifying waits until the campaign's status shows n lanes
// verifying and n MergeTask activities are running on a worker, then
// returns the lanes.
func waitLanesVerifying(t *testing.T, e *env, id string, n int) []campaign.LaneStatus {
	t.Helper()
	var lanes []campaign.LaneStatus
	err := wait.For(context.Background(), 3*time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
		// A query while the worker is busy or starting can fail; the wait
		// asks again (campaignStatus would end the test).
		v0, err := e.client.QueryWorkflow(ctx, id, "", workflows.StatusQueryName)
		if err != nil {
			return err
		}
		var st campaign.CampaignStatus
		if err := v0.Get(&st); err != nil {
			return err
		}
		lanes = st.Lanes
		v := 0
		for _, l := range st.Lanes {
			if l.State == "verifying" {
				v++
			}
		}
		if v < n {
			return fmt.Errorf("%d lanes verifying", v)
		}
		d, err := e.client.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return err
		}
		running := 0
		for _, pa := range d.RawResponse.GetPendingActivities() {
			if pa.GetActivityType().GetName() == activities.MergeTaskName && pa.GetAttempt() == 1 && pa.GetLastStartedTime() != nil {
				running++
			}
		}
		if running < n {
			return errors.New("the lanes' verifies are not running yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // into the verifies' sleep
	return lanes
}
