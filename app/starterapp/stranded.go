package starterapp

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// pollerGone is how long a version's workers must have been silent on a
// task queue before a rewind counts them gone: a live worker polls again at
// least once a minute (the server's long poll), while a stopped one stays in
// the queue's poller list, with its last poll time, for a few minutes.
const pollerGone = 70 * time.Second

// stranded is a pinned run whose version no worker polls any more (from),
// and the deployment's current version it can move to (to).
type stranded struct {
	from, to worker.WorkerDeploymentVersion
}

// strandedRun says whether the run described by info is pinned (by its
// workflow tasks or a pinned override) to a version that is not its
// deployment's current one and that has no poller on the run's task queue;
// nil when it is not, or when there is no current version to move it to.
func (s *session) strandedRun(ctx context.Context, info *workflowpb.WorkflowExecutionInfo) (*stranded, error) {
	vi := info.GetVersioningInfo()
	pinned := vi.GetDeploymentVersion()
	switch o := vi.GetVersioningOverride(); {
	case o.GetPinned().GetVersion() != nil:
		pinned = o.GetPinned().GetVersion()
	case o.GetAutoUpgrade() || vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED:
		return nil, nil
	}
	if pinned.GetBuildId() == "" {
		return nil, nil
	}
	from := worker.WorkerDeploymentVersion{DeploymentName: pinned.GetDeploymentName(), BuildID: pinned.GetBuildId()}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	desc, err := s.c.WorkerDeploymentClient().GetHandle(from.DeploymentName).Describe(qctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return nil, fmt.Errorf("describe worker deployment %s: %w", from.DeploymentName, err)
	}
	current := desc.Info.RoutingConfig.CurrentVersion
	if current == nil || *current == from {
		return nil, nil
	}
	resp, err := s.c.DescribeTaskQueue(qctx, info.GetTaskQueue(), enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return nil, fmt.Errorf("describe task queue %s: %w", info.GetTaskQueue(), err)
	}
	for _, p := range resp.GetPollers() {
		o := p.GetDeploymentOptions()
		if versioned(p) && o.GetDeploymentName() == from.DeploymentName && o.GetBuildId() == from.BuildID &&
			time.Since(p.GetLastAccessTime().AsTime()) < pollerGone {
			return nil, nil
		}
	}
	return &stranded{from: from, to: *current}, nil
}

// pinTo moves run runID of workflow id to version v with a pinned
// versioning override: its tasks go to v's workers from then on.
func (s *session) pinTo(ctx context.Context, id, runID string, v worker.WorkerDeploymentVersion) error {
	_, err := s.c.UpdateWorkflowExecutionOptions(ctx, client.UpdateWorkflowExecutionOptionsRequest{
		WorkflowId: id, RunId: runID,
		WorkflowExecutionOptionsChanges: client.WorkflowExecutionOptionsChanges{
			VersioningOverride: &client.VersioningOverrideChange{Value: &client.PinnedVersioningOverride{Version: v}},
		},
	})
	if err != nil {
		return fmt.Errorf("move run %s to version %s.%s: %w", runID, v.DeploymentName, v.BuildID, err)
	}
	return nil
}

// versionName is how Temporal names a version: <deployment>.<build id>.
func versionName(v worker.WorkerDeploymentVersion) string { return v.DeploymentName + "." + v.BuildID }
