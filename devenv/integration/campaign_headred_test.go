package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// headRedCheck fails on any tree holding the file broken, as the base this
// campaign starts from does (a red integration head nobody's task made).
const headRedCheck = `if [ -f broken ]; then echo "the integration head is broken: remove the file broken"; exit 4; fi
echo ok
`

// TestRealStackCampaignRedHead (SPEC 39, "a red head is nobody's task"): the
// integration head fails the campaign's verify command on its own. Task a's
// loop completes (its own verify passes), its merge fails, and the worker
// verifies the head alone: red too, so the queue pauses (head-red, the
// output in pauseOutput) and a stays queued with no merge attempt charged.
// resume while the head is still red checks it again and stays paused; once
// a person fixed the integration branch, resume lands a on its first go.
func TestRealStackCampaignRedHead(t *testing.T) {
	t.Parallel()
	bare, person := bareRepo(t)
	testkit.WriteFiles(t, person, map[string]string{"check.sh": headRedCheck, "broken": "x\n"})
	testkit.Git(t, person, "add", "check.sh", "broken")
	testkit.Git(t, person, "commit", "-q", "-m", "a red base")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	e := newEnv(t, agentScript(campaignModel), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)
	e.startWorker()

	id := "camp-red-head"
	in := campaign.CampaignInput{VerifyCommand: "bash check.sh",
		Tasks: []campaign.Task{{ID: "a", Objective: "TASK a: write a.txt", VerifyCommand: "true"}}}
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 10 * time.Minute,
	}, campaign.CampaignWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	paused := waitStatus(t, e, id, "the head-red pause", func(st campaign.CampaignStatus) bool { return st.PauseReason == campaign.PauseHeadRed })
	a := paused.Tasks[0]
	t.Logf("paused %s %q: %q; verifies %+v; a %s, %d merge attempts", paused.Phase, paused.PauseReason, paused.PauseOutput, paused.Verifies, a.Phase, a.MergeAttempts)
	if paused.Phase != workflows.PhasePaused || !strings.Contains(paused.PauseOutput, "the integration head is broken") ||
		a.Phase != campaign.TaskQueued || a.MergeAttempts != 0 || a.Go != 1 {
		t.Fatalf("while paused: %+v", paused)
	}
	if paused.VerifyCount != 2 || paused.VerifyFailed != 2 || len(paused.Verifies[1].Tasks) != 0 || paused.Verifies[1].ExitCode != 4 {
		t.Fatalf("verifies while paused: %+v", paused.Verifies)
	}

	resumeCampaign(t, e, id)
	still := waitStatus(t, e, id, "the head checked again", func(st campaign.CampaignStatus) bool { return st.VerifyCount == 3 })
	if still.Phase != workflows.PhasePaused || still.PauseReason != campaign.PauseHeadRed || still.Tasks[0].MergeAttempts != 0 {
		t.Fatalf("after resume on a red head: %+v", still)
	}

	// A person fixes the integration branch.
	branch := "ralph/campaigns/" + id + "/integration"
	testkit.Git(t, person, "fetch", "-q", "origin", branch)
	testkit.Git(t, person, "checkout", "-q", "--detach", "FETCH_HEAD")
	testkit.Git(t, person, "rm", "-q", "broken")
	testkit.Git(t, person, "commit", "-q", "-m", "fix the integration branch")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	resumeCampaign(t, e, id)

	var res campaign.CampaignResult
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	done := campaignStatus(t, e, id)
	if res.Status != campaign.CampaignComplete || done.Tasks[0].MergeAttempts != 0 || done.Tasks[0].Go != 1 || done.PauseReason != "" {
		t.Fatalf("result %+v; status %+v", res, done)
	}
	recordHistories(t, e, id)
	check := t.TempDir()
	testkit.Git(t, check, "clone", "-q", "-b", branch, bare, ".")
	if head := testkit.Git(t, check, "rev-parse", "HEAD"); head != res.Head {
		t.Fatalf("integration branch at %s, result head %s", head, res.Head)
	}
	cmd := exec.Command("bash", "check.sh")
	cmd.Dir = check
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(testkit.Git(t, check, "ls-files"), "a.txt") {
		t.Fatalf("the landed head: check %v %s; files %s", err, out, testkit.Git(t, check, "ls-files"))
	}
}

// waitStatus polls the campaign's status until ok, for at most 3 minutes.
func waitStatus(t *testing.T, e *env, id, what string, ok func(campaign.CampaignStatus) bool) campaign.CampaignStatus {
	t.Helper()
	var st campaign.CampaignStatus
	err := wait.For(context.Background(), 3*time.Minute, 200*time.Millisecond, func(ctx context.Context) error {
		v, err := e.client.QueryWorkflow(ctx, id, "", workflows.StatusQueryName)
		if err == nil {
			err = v.Get(&st)
		}
		if err != nil {
			return err
		}
		if !ok(st) {
			return fmt.Errorf("status %s %q, %d verifies", st.Phase, st.PauseReason, st.VerifyCount)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return st
}

func resumeCampaign(t *testing.T, e *env, id string) {
	t.Helper()
	h, err := e.client.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: workflows.UpdateResume, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(context.Background(), nil)
	}
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
}
