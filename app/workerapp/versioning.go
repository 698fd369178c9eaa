package workerapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/buildid"
)

// promoteTimeout bounds how long a starting worker tries to make its version
// current: the server knows a version only after its first poll.
const promoteTimeout = time.Minute

// DeploymentVersion is the worker's Worker Deployment Version, nil when
// versioning is off. An unset build id is derived from the binary.
func DeploymentVersion(v config.Versioning) (*worker.WorkerDeploymentVersion, error) {
	if v.Mode == config.VersioningOff {
		return nil, nil
	}
	id := v.BuildID
	if id == "" {
		var err error
		if id, err = buildid.Default(); err != nil {
			return nil, fmt.Errorf("derive the build id (set RALPH_BUILD_ID): %w", err)
		}
		if err := config.CheckBuildID(id); err != nil {
			return nil, fmt.Errorf("derived build id: %w; set RALPH_BUILD_ID", err)
		}
	}
	return &worker.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildID: id}, nil
}

// VersionString is how Temporal names a version: <deployment>.<build id>.
func VersionString(v *worker.WorkerDeploymentVersion) string {
	if v == nil {
		return "unversioned"
	}
	return v.DeploymentName + "." + v.BuildID
}

// SetCurrentCommand is the CLI command that makes v the current version.
func SetCurrentCommand(v worker.WorkerDeploymentVersion) string {
	return fmt.Sprintf("temporal worker deployment set-current-version --deployment-name %s --build-id %s", v.DeploymentName, v.BuildID)
}

// promote applies RALPH_SET_CURRENT once the worker polls: never, always, or
// if-none (only when the deployment has no current version yet, so a first
// deploy just works and a rolling deploy is promoted by the operator).
func promote(ctx context.Context, c client.Client, v worker.WorkerDeploymentVersion, mode string, logger *slog.Logger) error {
	command := SetCurrentCommand(v)
	if mode == config.SetCurrentNever {
		logger.Info("not making this version current (RALPH_SET_CURRENT=never); new runs go to it after: "+command, "version", VersionString(&v))
		return nil
	}
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	ctx, cancel := context.WithTimeout(ctx, promoteTimeout)
	defer cancel()
	var last error
	for {
		if mode == config.SetCurrentIfNone {
			desc, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
			if err == nil && desc.Info.RoutingConfig.CurrentVersion != nil {
				cur := *desc.Info.RoutingConfig.CurrentVersion
				if cur == v {
					logger.Info("this version is the deployment's current version", "version", VersionString(&v))
				} else {
					logger.Warn("the deployment has a current version: new runs go there, runs pinned to this version come here; to promote this one: "+command,
						"version", VersionString(&v), "current", VersionString(&cur))
				}
				return nil
			}
		}
		// always: the operator asked for this version whatever the current
		// one polled (a dev server's database remembers queues of old builds).
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID,
			IgnoreMissingTaskQueues: mode == config.SetCurrentAlways})
		if err == nil {
			logger.Info("made this version the deployment's current version", "version", VersionString(&v), "setCurrent", mode)
			return nil
		}
		last = err
		var notFound *serviceerror.NotFound
		var precondition *serviceerror.FailedPrecondition
		if !errors.As(err, &notFound) && !errors.As(err, &precondition) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("make version %s current: %w (gave up: %v); promote it with: %s", VersionString(&v), last, ctx.Err(), command)
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("make version %s current: %w; promote it with: %s", VersionString(&v), last, command)
}
