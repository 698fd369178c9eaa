package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// campaignLike plays a campaign (workflow id "camp") that starts one task
// loop as a real Ralph child asking it to report its end, cancels it after
// cancelAfter (when positive), and returns the end the loop signalled.
func campaignLike(ctx workflow.Context, input json.RawMessage, start TaskStart, cancelAfter time.Duration) (TaskEnded, error) {
	cctx, cancel := workflow.WithCancel(ctx)
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{WorkflowID: "camp/a/2", WaitForCancellation: true})
	f := workflow.ExecuteChildWorkflow(cctx, WorkflowName, input, (*Continuation)(nil), &start)
	if cancelAfter > 0 {
		workflow.Go(ctx, func(ctx workflow.Context) {
			_ = workflow.Sleep(ctx, cancelAfter)
			cancel()
		})
	}
	childErr := f.Get(ctx, nil)
	var end TaskEnded
	if !workflow.GetSignalChannel(ctx, SignalTaskEnded).ReceiveAsync(&end) {
		return end, fmt.Errorf("the loop ended (%v) without telling its campaign", childErr)
	}
	return end, nil
}

// TestTaskLoopTellsItsCampaignHowItEnded (SPEC 39, loops outlive a run): a
// campaign's loop started with ReportEnd signals the campaign by workflow
// id on every way it ends — completed (commit, rounds, usage, the
// summary), failed (the error and the whole run's usage), cancelled (the
// rounds before the cancel) — and a TaskStart naming a workflow that is
// not the loop's parent makes it signal nobody.
func TestTaskLoopTellsItsCampaignHowItEnded(t *testing.T) {
	start := TaskStart{Campaign: "camp", ReportEnd: true, Task: "a", Go: 2}
	two := roundUsage.Add(roundUsage)
	failed := usage.Usage{ModelCalls: 1, PromptTokens: 7}
	cases := []struct {
		name        string
		s           *script
		start       TaskStart
		cancelAfter time.Duration
		want        TaskEnded
		wantErr     string
	}{
		{name: "completed", s: &script{reports: map[int]report.Report{2: completeReport(2)}, commits: map[int]string{1: "c1", 2: "c2"}},
			start: start, want: TaskEnded{Status: report.OutcomeComplete, Commit: "c2", Rounds: 2, Usage: two, Blocker: "finished in 2"}},
		{name: "failed", s: &script{failAt: map[int]error{3: temporal.NewNonRetryableApplicationError("model said 401",
			activities.ErrTypeChildFailed, nil, activities.FailureDetails{SessionID: "s3", Usage: failed})}},
			start: start, want: TaskEnded{Status: OutcomeFailed, Usage: two.Add(failed), Failure: "model said 401"}},
		{name: "cancelled", s: &script{}, start: start, cancelAfter: 25 * time.Second,
			want: TaskEnded{Status: OutcomeCancelled, Usage: two, Failure: "canceled"}},
		{name: "not its parent", s: &script{reports: map[int]report.Report{1: completeReport(1)}},
			start: TaskStart{Campaign: "other", ReportEnd: true, Task: "a", Go: 2}, wantErr: "without telling its campaign"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, testLimits(), tc.s)
			if tc.cancelAfter > 0 {
				slowRounds(env, tc.s, 10*time.Second)
			}
			env.RegisterWorkflow(campaignLike)
			env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "camp"})
			env.ExecuteWorkflow(campaignLike, json.RawMessage(`{"objective":"fix it"}`), tc.start, tc.cancelAfter)
			err := env.GetWorkflowError()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got TaskEnded
			if err := env.GetWorkflowResult(&got); err != nil {
				t.Fatal(err)
			}
			t.Logf("the campaign was told %+v", got)
			if !strings.Contains(got.Failure, tc.want.Failure) || (tc.want.Failure == "") != (got.Failure == "") {
				t.Fatalf("failure = %q, want one holding %q", got.Failure, tc.want.Failure)
			}
			got.Failure = tc.want.Failure
			tc.want.Task, tc.want.Go, tc.want.WorkflowID = "a", 2, "camp/a/2"
			if got != tc.want {
				t.Fatalf("told %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTaskLoopReportsAcrossItsOwnContinueAsNew: the campaign to tell rides
// in the loop's own continuation; its continue-as-new tells nobody, the
// run that ends does.
func TestTaskLoopReportsAcrossItsOwnContinueAsNew(t *testing.T) {
	limits := testLimits()
	limits.RoundsPerRun = 1
	env := newEnv(t, limits, &script{})
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(`{"objective":"fix it"}`), (*Continuation)(nil))
	cont := decodeContinuation(t, env.GetWorkflowError())
	cont.ReportEnd = &TaskReportTo{Campaign: "camp", Task: "a", Go: 3}

	var mu sync.Mutex
	var told []TaskEnded
	tell := func(_, workflowID, runID, name string, arg any) error {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := arg.(TaskEnded); ok && workflowID == "camp" && runID == "" && name == SignalTaskEnded {
			told = append(told, e)
		}
		return nil
	}
	s := &script{reports: map[int]report.Report{3: completeReport(3)}, commits: map[int]string{3: "c3"}}
	env2 := newEnv(t, limits, s)
	env2.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(tell)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	cont2 := decodeContinuation(t, env2.GetWorkflowError())
	if cont2.ReportEnd == nil || *cont2.ReportEnd != *cont.ReportEnd || len(told) != 0 {
		t.Fatalf("continuation carries %+v (want %+v); told %+v at the continue-as-new", cont2.ReportEnd, cont.ReportEnd, told)
	}

	env3 := newEnv(t, limits, s)
	env3.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(tell)
	env3.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "camp/a/3"})
	env3.SetContinuedExecutionRunID("run-2")
	env3.ExecuteWorkflow(WorkflowName, nil, &cont2)
	if err := env3.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 || told[0].Status != report.OutcomeComplete || told[0].Commit != "c3" || told[0].Rounds != 3 ||
		told[0].Task != "a" || told[0].Go != 3 || told[0].WorkflowID != "camp/a/3" {
		t.Fatalf("told %+v, want one complete end of a's go 3 at c3", told)
	}
}
