package campaign

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/workflows"
)

// queueApartLimits are the deployment's default limits (remote git, no
// deployment verify command) with one campaign behaviour on: the queue
// beside the main loop (CampaignQueueApart). A test switches on or off the
// behaviours it tests; activities.WithCurrentBehaviours switches on all of
// them, as a worker resolving a new campaign's limits does.
func queueApartLimits() activities.Limits {
	l := activities.DefaultLimits()
	l.Git = "remote"
	l.VerifyCommand = ""
	l.CampaignQueueApart = true
	return l
}

// updateResult is what a test's update came to.
type updateResult struct {
	rejected error
	failed   error
	ack      CampaignAck
	done     bool
}

// sendUpdate sends an update at the given workflow time and records how it
// ended.
func sendUpdate(env *testsuite.TestWorkflowEnvironment, at time.Duration, name string, args ...any) *updateResult {
	r := &updateResult{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, name+at.String(), &testsuite.TestUpdateCallback{
			OnReject: func(err error) { r.rejected, r.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				r.done, r.failed = true, err
				if a, ok := v.(CampaignAck); ok {
					r.ack = a
				}
			},
		}, args...)
	}, at)
	return r
}

// workflowSuite makes every campaign test environment.
type workflowSuite struct {
	testsuite.WorkflowTestSuite
}

// NewTestWorkflowEnvironment is the SDK's with a longer wall-clock wait for
// the next thing to happen: the SDK's 3 s is short for a -race run on a
// busy 2-core machine.
func (s *workflowSuite) NewTestWorkflowEnvironment() *testsuite.TestWorkflowEnvironment {
	env := s.WorkflowTestSuite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	return env
}

// newCampaignEnv is a test environment for the campaign "camp" under
// limits, whose PrepareTask finds every branch at the head "h"; each test
// adds the task loop and the merge it plays (onLoop, onMerge).
func newCampaignEnv(limits activities.Limits) *testsuite.TestWorkflowEnvironment {
	var suite workflowSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterActivityWithOptions(func(context.Context) (activities.Limits, error) { return limits, nil },
		activity.RegisterOptions{Name: activities.ResolveLimitsName})
	env.RegisterActivityWithOptions(func(context.Context, activities.PrepareTaskInput) (activities.PrepareTaskOutput, error) {
		return activities.PrepareTaskOutput{IntegrationHead: "h", TaskHead: "h"}, nil
	}, activity.RegisterOptions{Name: activities.PrepareTaskName})
	env.RegisterWorkflowWithOptions(Campaign, workflow.RegisterOptions{Name: CampaignWorkflowName})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "camp", TaskQueue: "q", WorkflowExecutionTimeout: time.Hour})
	return env
}

// onMerge plays the campaign's MergeTask with merge.
func onMerge(env *testsuite.TestWorkflowEnvironment, merge any) {
	env.RegisterActivityWithOptions(merge, activity.RegisterOptions{Name: activities.MergeTaskName})
}

// onLoop plays the campaign's task loops (its Ralph children) with loop.
func onLoop(env *testsuite.TestWorkflowEnvironment, loop any) {
	env.RegisterWorkflowWithOptions(loop, workflow.RegisterOptions{Name: workflows.WorkflowName})
}

// onNotify hands each notification the campaign starts (a detached
// RalphNotify child) to record, in place of sending it.
func onNotify(env *testsuite.TestWorkflowEnvironment, record func(activities.NotifyInput)) {
	env.RegisterWorkflowWithOptions(workflows.RalphNotify, workflow.RegisterOptions{Name: workflows.NotifyWorkflowName})
	env.OnWorkflow(workflows.NotifyWorkflowName, mock.Anything, mock.Anything).Return(func(_ workflow.Context, in activities.NotifyInput) error {
		record(in)
		return nil
	})
}

// runCampaign runs a new campaign of input to its end; a workflow error
// fails the test.
func runCampaign(t *testing.T, env *testsuite.TestWorkflowEnvironment, input string) CampaignResult {
	t.Helper()
	env.ExecuteWorkflow(CampaignWorkflowName, json.RawMessage(input), (*CampaignContinuation)(nil))
	var res CampaignResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// campaignStatus is the campaign's status as its query answers it.
func campaignStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) CampaignStatus {
	t.Helper()
	v, err := env.QueryWorkflow(workflows.StatusQueryName)
	if err != nil {
		t.Fatal(err)
	}
	var s CampaignStatus
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// campaignTask is one task as the task query answers it.
func campaignTask(t *testing.T, env *testsuite.TestWorkflowEnvironment, id string) TaskStatus {
	t.Helper()
	v, err := env.QueryWorkflow(QueryTask, TaskQuery{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	var d TaskDetail
	if err := v.Get(&d); err != nil {
		t.Fatal(err)
	}
	if len(d.Goes) != d.Go {
		t.Fatalf("task %s: %d goes listed at go %d", id, len(d.Goes), d.Go)
	}
	return d.TaskStatus
}
