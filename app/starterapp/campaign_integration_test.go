package starterapp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// standInCampaign answers the starter's campaign verbs under the Campaign
// type until the real workflow's real-stack test covers them: the first
// task merges at once, the others await approval; approve lands one, the
// campaign ends partial once no task awaits (a rejected one is blocked).
// add-tasks refuses a task named "refuse-me" as a validator does.
func standInCampaign(ctx workflow.Context, in campaign.CampaignInput) (campaign.CampaignResult, error) {
	st := campaign.CampaignStatus{Phase: "running", IntegrationBranch: "ralph/campaigns/x/integration", Head: "1111111111111111"}
	for i, t := range in.Tasks {
		ts := campaign.TaskStatus{ID: t.ID, Phase: campaign.TaskAwaitingApproval, Go: 1, Round: 2}
		if i == 0 {
			ts.Phase, ts.MergeCommit = campaign.TaskMerged, "abcdef0123456789"
			st.Merged++
		}
		st.Tasks = append(st.Tasks, ts)
	}
	setPhase := func(task, phase, failure string) error {
		for i := range st.Tasks {
			if st.Tasks[i].ID == task {
				st.Tasks[i].Phase, st.Tasks[i].LastFailure = phase, failure
				return nil
			}
		}
		return errors.New("no task " + task)
	}
	if err := workflow.SetQueryHandler(ctx, workflows.StatusQueryName, func() (campaign.CampaignStatus, error) { return st, nil }); err != nil {
		return campaign.CampaignResult{}, err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, campaign.UpdateAddTasks, func(_ workflow.Context, r campaign.AddTasksRequest) error {
		for _, t := range r.Tasks {
			st.Tasks = append(st.Tasks, campaign.TaskStatus{ID: t.ID, Phase: campaign.TaskWaiting})
		}
		return nil
	}, workflow.UpdateHandlerOptions{Validator: func(r campaign.AddTasksRequest) error {
		for _, t := range r.Tasks {
			if t.ID == "refuse-me" {
				return errors.New(`InvalidInput: tasks[0].id: "refuse-me" is refused`)
			}
		}
		return nil
	}})
	if err == nil {
		err = workflow.SetUpdateHandler(ctx, workflows.UpdateApprove, func(_ workflow.Context, r campaign.TaskRequest) (campaign.CampaignStatus, error) {
			if err := setPhase(r.Task, campaign.TaskMerged, ""); err != nil {
				return st, err
			}
			st.Merged++
			return st, nil
		})
	}
	if err == nil {
		err = workflow.SetUpdateHandler(ctx, workflows.UpdateReject, func(_ workflow.Context, r campaign.RejectRequest) error {
			if r.Task == "" {
				return nil // a Ralph run's reject: nothing to do here
			}
			return setPhase(r.Task, campaign.TaskBlocked, r.Reason)
		})
	}
	if err != nil {
		return campaign.CampaignResult{}, err
	}
	if err := workflow.Await(ctx, func() bool {
		for _, t := range st.Tasks {
			if t.Phase == campaign.TaskAwaitingApproval {
				return false
			}
		}
		return true
	}); err != nil {
		return campaign.CampaignResult{}, err
	}
	res := campaign.CampaignResult{Status: campaign.CampaignComplete, IntegrationBranch: st.IntegrationBranch, Head: st.Head}
	for _, t := range st.Tasks {
		if t.Phase != campaign.TaskMerged {
			res.Status = campaign.CampaignPartial
		}
		res.Tasks = append(res.Tasks, campaign.TaskResult{ID: t.ID, Phase: t.Phase, MergeCommit: t.MergeCommit, LastFailure: t.LastFailure})
	}
	return res, nil
}

// The campaign verbs against a dev server: what the server received (the
// start input and every update's argument, read from the history), the
// lines, the refusal and the exit codes.
func TestStarterCampaignVerbs(t *testing.T) {
	s := startStack(t)
	dir := t.TempDir()
	tasks := filepath.Join(dir, "plan.md")
	if err := os.WriteFile(tasks, []byte("- [ ] api: build it\n- [ ] docs: write it\n  after: api\n- [ ] cli: wire it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	more := filepath.Join(dir, "more.yaml")
	if err := os.WriteFile(more, []byte("- {id: extra, objective: more, dependsOn: [api]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := filepath.Join(dir, "refused.json")
	if err := os.WriteFile(refused, []byte(`[{"id": "refuse-me", "objective": "x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}

	done := make(chan invocation, 1)
	go func() {
		done <- s.starter(t, nil, "campaign", "--tasks", tasks, "--parallel", "3", "--verify", "make check")
	}()
	const id = "campaign-plan"
	waitForStatus(t, s, id)

	s.starter(t, nil, "campaign-status", "--id", id).expect(t, ExitComplete,
		[]string{"campaign running: 1 of 3 merged into ralph/campaigns/x/integration at 1111111", "  api", "merged", "abcdef0", "docs", "awaiting-approval"}, nil)
	inv := s.starter(t, nil, "campaign-status", id, "--json")
	var st campaign.CampaignStatus
	if err := json.Unmarshal([]byte(inv.stdout), &st); err != nil || len(st.Tasks) != 3 {
		t.Errorf("campaign-status --json: %v\n%s", err, inv.stdout)
	}
	s.starter(t, nil, "add-tasks", "--id", id, "--tasks", refused).expect(t, ExitFailed, nil,
		[]string{"workflow campaign-plan refused add-tasks:", `"refuse-me" is refused`})
	s.starter(t, nil, "add-tasks", "--id", id, "--tasks", more).expect(t, ExitComplete, nil, []string{"add-tasks accepted by workflow campaign-plan"})
	s.starter(t, nil, "approve", "--id", id, "--task", "nope").expect(t, ExitFailed, nil, []string{"refused approve", "no task nope"})
	s.starter(t, nil, "reject", id, "--reason", "not like this").expect(t, ExitComplete, nil, nil)
	s.starter(t, nil, "reject", "--id", id, "--task", "cli", "--reason", "too broad").expect(t, ExitComplete, nil, []string{"reject accepted by workflow campaign-plan task cli"})
	s.starter(t, nil, "approve", "--id", id, "--task", "docs").expect(t, ExitComplete, []string{`"merged": 2`}, nil)

	select {
	case inv := <-done:
		inv.expect(t, ExitPartial, []string{"Campaign campaign-plan: partial, 2 of 4 tasks merged into ralph/campaigns/x/integration at 1111111",
			"docs", "cli                  blocked           too broad"}, []string{"campaign campaign-plan (run", "3 tasks"})
		if !strings.Contains(inv.stderr, "awaiting-approval") || !strings.Contains(inv.stderr, "  docs                 merged") {
			t.Errorf("the live lines missed a change:\n%s", inv.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the campaign command did not return after the last approval")
	}

	// What the server received, in order: the start input, then each
	// accepted update's argument.
	want := []string{
		`{"tasks":[{"id":"api","objective":"build it"},{"id":"docs","objective":"write it","dependsOn":["api"]},{"id":"cli","objective":"wire it"}],"maxParallel":3,"verifyCommand":"make check"}`,
		`add-tasks {"tasks":[{"id":"extra","objective":"more","dependsOn":["api"]}]}`,
		`approve {"task":"nope"}`,
		`reject {"reason":"not like this"}`,
		`reject {"task":"cli","reason":"too broad"}`,
		`approve {"task":"docs"}`,
	}
	if got := received(t, s, id); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	s.starter(t, nil, "campaign", "--tasks", tasks, "--id", "bad/id").expect(t, ExitUsage, nil, []string{`--id "bad/id"`})
}

func waitForStatus(t *testing.T, s *stack, id string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if inv := s.starter(t, nil, "campaign-status", "--id", id); inv.code == ExitComplete {
			return
		}
	}
	t.Fatalf("campaign %s never answered its status query", id)
}

// received is the campaign's start input and its updates' arguments, as
// compact JSON, from its history.
func received(t *testing.T, s *stack, id string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := s.srv.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	compact := func(data []byte) string {
		var b bytes.Buffer
		if err := json.Compact(&b, data); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	iter := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			out = append(out, compact(a.GetInput().GetPayloads()[0].GetData()))
		}
		if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil {
			in := a.GetAcceptedRequest().GetInput()
			out = append(out, in.GetName()+" "+compact(in.GetArgs().GetPayloads()[0].GetData()))
		}
	}
	return out
}
