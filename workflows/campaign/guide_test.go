package campaign

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

func TestCampaignGuideReachesTheRunningLoops(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	limits := queueApartLimits()
	env := newCampaignEnv(limits)
	onMerge(env, f.merge)
	var mu sync.Mutex
	got := map[string][]string{}
	// Each loop takes the guide signals of its first ten minutes, then completes.
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
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
	})
	one := sendUpdate(env, time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Task: "a", Text: "only a"})
	all := sendUpdate(env, 2*time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Text: " everyone "})
	unknown := sendUpdate(env, 3*time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Task: "zz", Text: "x"})
	empty := sendUpdate(env, 4*time.Minute, workflows.UpdateGuide, CampaignGuideRequest{Text: ""})
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"}],"verifyCommand":"check","maxParallel":2}`
	runCampaign(t, env, in)
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

// TestStopAndGuideDuringPreparationAreKept: guidance sent while a task's
// branch is prepared reaches its loop once it starts; a stop sent while
// another task is prepared prevents that task's start, and the running
// loop gets the stop.
func TestStopAndGuideDuringPreparationAreKept(t *testing.T) {
	f := &fakeLine{reports: map[string]*report.Report{}}
	env := newCampaignEnv(queueApartLimits())
	onMerge(env, f.merge)
	// a's branch takes 10 s to prepare, b's 40 s.
	env.OnActivity(activities.PrepareTaskName, mock.Anything, mock.MatchedBy(func(in activities.PrepareTaskInput) bool { return in.Task.ID == "a" })).
		After(10*time.Second).Return(activities.PrepareTaskOutput{IntegrationHead: "h", TaskHead: "h"}, nil)
	env.OnActivity(activities.PrepareTaskName, mock.Anything, mock.MatchedBy(func(in activities.PrepareTaskInput) bool { return in.Task.ID == "b" })).
		After(40*time.Second).Return(activities.PrepareTaskOutput{IntegrationHead: "h", TaskHead: "h"}, nil)
	var mu sync.Mutex
	var got []string
	started := map[string]bool{}
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		id := workflow.GetInfo(ctx).WorkflowExecution.ID
		mu.Lock()
		started[id] = true
		mu.Unlock()
		sel := workflow.NewSelector(ctx)
		stopped := false
		sel.AddReceive(workflow.GetSignalChannel(ctx, workflows.SignalGuide), func(c workflow.ReceiveChannel, _ bool) {
			var req workflows.GuideRequest
			c.Receive(ctx, &req)
			mu.Lock()
			got = append(got, id+": guide "+req.Text)
			mu.Unlock()
		})
		sel.AddReceive(workflow.GetSignalChannel(ctx, workflows.SignalStop), func(c workflow.ReceiveChannel, _ bool) {
			var req workflows.StopRequest
			c.Receive(ctx, &req)
			mu.Lock()
			got = append(got, id+": stop "+req.Reason)
			mu.Unlock()
			stopped = true
		})
		for !stopped {
			sel.Select(ctx)
		}
		return &workflows.Result{Status: report.OutcomeStopped, RoundsStarted: 1}, nil
	})
	guide := sendUpdate(env, 5*time.Second, workflows.UpdateGuide, CampaignGuideRequest{Task: "a", Text: "mind the tests"})
	stop := sendUpdate(env, 20*time.Second, workflows.UpdateStop, workflows.StopRequest{Reason: "end of day"})
	in := `{"tasks":[{"id":"a","objective":"a"},{"id":"b","objective":"b"}],"verifyCommand":"check","maxParallel":2}`
	runCampaign(t, env, in)
	if guide.rejected != nil || stop.rejected != nil {
		t.Fatalf("refused: %v, %v", guide.rejected, stop.rejected)
	}
	if fmt.Sprint(got) != "[camp/a: guide mind the tests camp/a: stop end of day]" || started["camp/b"] {
		t.Fatalf("loops got %v; b started: %v", got, started["camp/b"])
	}
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != CampaignStopped || res.Tasks[1].Phase != TaskCancelled || !strings.Contains(res.Tasks[1].LastFailure, "before the task's loop started") {
		t.Fatalf("result %+v", res)
	}
}
