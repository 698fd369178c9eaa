package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
)

// startTaskLoop runs a Ralph loop as a planned campaign's task, as the
// campaign does: its TaskStart names the campaign's objective.
func startTaskLoop(ctx workflow.Context, input json.RawMessage, objective string) error {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: "camp/task"})
	return workflow.ExecuteChildWorkflow(cctx, WorkflowName, input, (*Continuation)(nil),
		&TaskStart{Campaign: "camp", CampaignObjective: objective}).Get(ctx, nil)
}

// A planned campaign's objective reaches every round of its task's loop as
// context beside the task's own, across the loop's continue-as-new; an
// over-long one is refused naming the bound.
func TestCampaignObjectiveReachesEveryRound(t *testing.T) {
	limits := testLimits()
	s := &script{reports: map[int]report.Report{2: completeReport(2)}}
	env := newEnv(t, limits, s)
	env.RegisterWorkflow(startTaskLoop)
	env.ExecuteWorkflow(startTaskLoop, json.RawMessage(`{"objective":"add alpha"}`), "  Greet in three languages. ")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(s.inputs) != 2 {
		t.Fatalf("%d rounds, want 2", len(s.inputs))
	}
	for _, in := range s.inputs {
		if in.CampaignObjective != "Greet in three languages." || in.Objective != "add alpha" {
			t.Fatalf("round %d: objective %q, campaign's %q", in.Round, in.Objective, in.CampaignObjective)
		}
	}

	// A continuation carries it to the next run's rounds and on to the
	// run after (the test environment's child continue-as-new is not a
	// server's, so the loop's own continuation is made outside a campaign
	// and given the campaign's objective).
	limits.RoundsPerRun = 2
	direct := newEnv(t, limits, &script{})
	direct.ExecuteWorkflow(WorkflowName, json.RawMessage(`{"objective":"fix it"}`), (*Continuation)(nil))
	cont := decodeContinuation(t, direct.GetWorkflowError())
	if cont.CampaignObjective != "" {
		t.Fatalf("a run outside a campaign carries %q", cont.CampaignObjective)
	}
	cont.CampaignObjective = "Greet in three languages."
	next := &script{}
	env2 := newEnv(t, activities.Limits{}, next)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	again := decodeContinuation(t, env2.GetWorkflowError())
	if len(next.inputs) != 2 || next.inputs[0].CampaignObjective != "Greet in three languages." || next.inputs[1].CampaignObjective != "Greet in three languages." {
		t.Fatalf("next run's rounds %+v", next.inputs)
	}
	if again.CampaignObjective != "Greet in three languages." {
		t.Fatalf("the next continuation carries %q", again.CampaignObjective)
	}

	long := newEnv(t, limits, &script{})
	long.RegisterWorkflow(startTaskLoop)
	long.ExecuteWorkflow(startTaskLoop, json.RawMessage(`{"objective":"add alpha"}`), strings.Repeat("x", limits.MaxObjectiveChars+1))
	if err := long.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "the campaign's objective is 51 characters, over the limit of 50") {
		t.Fatalf("over-long campaign objective: %v", err)
	}
}
