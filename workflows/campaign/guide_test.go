package campaign

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

func TestCampaignGuideReachesTheRunningLoops(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	limits := campaignLimits()
	env := newCampaignEnv(limits)
	env.RegisterActivityWithOptions(f.merge, activity.RegisterOptions{Name: activities.MergeTaskName})
	var mu sync.Mutex
	got := map[string][]string{}
	// Each loop takes the guide signals of its first ten minutes, then completes.
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		ch := workflow.GetSignalChannel(ctx, workflows.SignalGuide)
		deadline := workflow.Now(ctx).Add(10 * time.Minute)
		for {
			var req workflows.GuideRequest
			if ok, _ := ch.ReceiveWithTimeout(ctx, deadline.Sub(workflow.Now(ctx)), &req); !ok {
				break
			}
			mu.Lock()
			got[id] = append(got[id], req.Text)
			mu.Unlock()
		}
		rep := completeReport(1)
		task := strings.TrimPrefix(id, "camp/")
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep,
			Checkpoint: &activities.Checkpoint{Commit: fmt.Sprintf("%s@1", task)}}, nil
	}, workflow.RegisterOptions{Name: workflows.WorkflowName})
	one := sendUpdate(env, time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Task: "a", Text: "only a"})
	all := sendUpdate(env, 2*time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Text: " everyone "})
	unknown := sendUpdate(env, 3*time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Task: "zz", Text: "x"})
	empty := sendUpdate(env, 4*time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Text: ""})
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"}],"verifyCommand":"check","maxParallel":2}`
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(in), (*CampaignContinuation)(nil))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if one.rejected != nil || all.rejected != nil {
		t.Fatalf("guide refused: %v, %v", one.rejected, all.rejected)
	}
	if unknown.rejected == nil || !strings.Contains(unknown.rejected.Error(), `task "zz" is not in the campaign`) {
		t.Fatalf("guide to an unknown task = %+v", unknown)
	}
	if empty.rejected == nil || !strings.Contains(empty.rejected.Error(), "text is empty") {
		t.Fatalf("empty guide = %+v", empty)
	}
	if fmt.Sprint(got["camp/a"]) != "[only a everyone]" || fmt.Sprint(got["camp/b"]) != "[everyone]" {
		t.Fatalf("loops got %v", got)
	}
}
