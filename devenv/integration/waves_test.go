package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// wavesPlanner plays a planning campaign's planners (SPEC 40) and hands
// every other session to campaignModel: wave 1's planner first submits a
// plan with a cycle, is refused naming the rule, and submits tasks a and
// p; wave 2's planner plans c. It keeps each planner's prompt.
type wavesPlanner struct {
	mu       sync.Mutex
	prompts  map[int][]string
	refusals []string
}

func (w *wavesPlanner) play(tn turn) fakeopenai.Response {
	if !tn.IsPlanner() {
		return campaignModel(tn)
	}
	wave := tn.Wave()
	w.mu.Lock()
	defer w.mu.Unlock()
	if tn.Step() == 0 {
		w.prompts[wave] = append(w.prompts[wave], tn.Prompt())
	}
	last := tn.LastToolOutput()
	task := func(id string, deps ...string) fakeopenai.PlanTask {
		return fakeopenai.PlanTask{ID: id, Objective: fmt.Sprintf("TASK %s: write %s.txt", id, id), DependsOn: deps}
	}
	switch {
	case wave == 1 && tn.Step() == 0:
		return tool("list_files", map[string]string{})
	case wave == 1 && !strings.Contains(last, "cycle"):
		return fakeopenai.Tools(fakeopenai.SubmitPlan(fakeopenai.PlanArgs{Status: "tasks", Summary: "two tasks waiting for each other",
			Tasks: []fakeopenai.PlanTask{task("p", "q"), task("q", "p")}}))
	case wave == 1:
		w.refusals = append(w.refusals, last)
		return fakeopenai.Tools(fakeopenai.SubmitPlan(fakeopenai.PlanArgs{Status: "tasks", Summary: "a, then p after it",
			Tasks: []fakeopenai.PlanTask{task("a"), task("p", "a")}}))
	}
	return fakeopenai.Tools(fakeopenai.SubmitPlan(fakeopenai.PlanArgs{Status: "tasks", Summary: "c, since blk could not run",
		Tasks: []fakeopenai.PlanTask{task("c")}}))
}

// TestRealStackWaves runs a campaign from an objective on the real stack
// with approve plan and maxWaves 2: wave 1's plan with a cycle goes back to
// its planner naming the rule; a person replaces the valid plan with an
// edited list (a and blk, which blocks); wave 2's planner's report names
// blk blocked and why; wave 2's plan is approved as is and merges; maxWaves
// reached ends the campaign partial.
func TestRealStackWaves(t *testing.T) {
	t.Parallel()
	bare, person := bareRepo(t)
	testkit.WriteFiles(t, person, map[string]string{"check.sh": campaignCheck})
	testkit.Git(t, person, "add", "check.sh")
	testkit.Git(t, person, "commit", "-q", "-m", "the campaign's check")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	w := &wavesPlanner{prompts: map[int][]string{}}
	e := newEnv(t, agentScript(w.play), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)
	e.startWorker()

	const id = "waves"
	two := 2
	in := campaign.CampaignInput{Objective: "Write the files the tasks name.", MaxWaves: &two, VerifyCommand: "bash check.sh", Approve: campaign.ApprovePlan}
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 10 * time.Minute},
		campaign.CampaignWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	awaitPlan := func(wave int) campaign.CampaignStatus {
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
			if st.Phase != campaign.PhaseAwaitingPlanApproval || st.Plan == nil || st.Plan.Wave != wave {
				return errors.New("no plan of wave " + fmt.Sprint(wave) + " awaits approval")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := awaitPlan(1)
	if first.Plan.Summary != "a, then p after it" || len(first.Plan.Tasks) != 2 {
		t.Fatalf("wave 1's plan awaiting approval: %+v", first.Plan)
	}
	if len(w.refusals) != 1 || !strings.Contains(w.refusals[0], "p -> q -> p") {
		t.Fatalf("the planner's cycle was refused with %q", w.refusals)
	}
	// The person's list: a, and blk instead of p.
	update(t, e, id, workflows.UpdateApprove, campaign.TaskRequest{Tasks: []campaign.Task{
		{ID: "a", Objective: "TASK a: write a.txt"}, {ID: "blk", Objective: "TASK blk: needs a credential"}}})
	awaitPlan(2)
	update(t, e, id, workflows.UpdateApprove, campaign.TaskRequest{})

	var res campaign.CampaignResult
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	phases := map[string]string{}
	for _, tr := range res.Tasks {
		phases[tr.ID] = tr.Phase
	}
	if res.Status != campaign.CampaignPartial || fmt.Sprint(phases) != "map[a:merged blk:blocked c:merged]" || len(res.Waves) != 2 ||
		res.Waves[0].Approval != "replaced" || strings.Join(res.Waves[0].Tasks, ",") != "a,blk" || res.Waves[1].Approval != "approved" {
		t.Fatalf("result %+v", res)
	}
	recordCampaign(t, e, id, campaignStatus(t, e, id))
	w.mu.Lock()
	defer w.mu.Unlock()
	second := w.prompts[2][0]
	if !strings.Contains(second, "- blk: blocked") || !strings.Contains(second, "needs a credential nobody gave") || !strings.Contains(second, "- a: merged") {
		t.Fatalf("wave 2's planner's prompt does not name blk blocked:\n%s", second)
	}
}
