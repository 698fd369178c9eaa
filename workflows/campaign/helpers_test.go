package campaign

import (
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
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
