package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/report"
)

// gitHooksDirName is the empty directory under SessionDir that stands in for
// every workspace's git hooks during the worker's own git steps.
const gitHooksDirName = "git-empty-hooks"

// workspaceRound is the workspace side of one round: preparing it (git),
// the fingerprint taken before the session, and the checkpoint after a
// valid report. With git off only the fingerprint is taken.
type workspaceRound struct {
	git      *gitws.Git // nil when checkpoints are off
	dir      string
	round    gitws.Round
	prepared gitws.Prepared
	before   string
	logger   log.Logger
	tracing  tracing.Options
}

// beginWorkspace prepares dir for the session (git on: init or fetch, and on
// a retry the lost attempt's leftovers saved and the tree reset) and takes
// the opening fingerprint. Call it while holding the workspace lock.
func (a *Activities) beginWorkspace(ctx context.Context, dir string, in RoundInput, details FailureDetails) (*workspaceRound, error) {
	info := activity.GetInfo(ctx)
	w := &workspaceRound{git: a.git, dir: dir, logger: activity.GetLogger(ctx), tracing: a.cfg.Agent.Tracing, round: gitws.Round{
		WorkflowID: info.WorkflowExecution.ID, Workspace: in.Workspace,
		Round: in.Round, MaxRounds: in.MaxRounds, Attempt: int(info.Attempt), Checkpoint: in.Checkpoint, Rewound: in.Rewound,
	}}
	var err error
	if w.git == nil {
		if w.before, err = gitws.FilesFingerprint(ctx, dir); err != nil {
			return nil, w.stepError(ctx, err, details)
		}
		return w, nil
	}
	if w.prepared, err = w.git.Prepare(ctx, dir, w.round); err != nil {
		return nil, w.stepError(ctx, fmt.Errorf("prepare the workspace's git work tree: %w", err), details)
	}
	if w.prepared.Rewound != "" {
		w.logger.Info("The run was rewound: saved what the workspace held and restored the run's checkpoint", "round", in.Round,
			"ref", w.prepared.Rewound, "commit", w.prepared.RewoundCommit, "resetTo", in.Checkpoint)
	}
	if w.prepared.Abandoned != "" {
		w.logger.Info("Saved what the lost attempt left uncommitted", "round", in.Round,
			"ref", w.prepared.Abandoned, "commit", w.prepared.AbandonedCommit, "resetTo", w.prepared.Base)
	}
	if w.before, err = w.git.WorkTree(ctx, dir); err != nil {
		return nil, w.stepError(ctx, fmt.Errorf("fingerprint the workspace: %w", err), details)
	}
	return w, nil
}

// finish runs after a valid report: with git on it commits (and in remote
// mode pushes) the round's checkpoint; in every mode it says whether the
// session changed the workspace.
func (w *workspaceRound) finish(ctx context.Context, rep report.Report, details FailureDetails) (*Checkpoint, bool, error) {
	if w.git == nil {
		after, err := gitws.FilesFingerprint(ctx, w.dir)
		if err != nil {
			return nil, false, w.stepError(ctx, err, details)
		}
		return nil, after != w.before, nil
	}
	ctx, span := w.tracing.Start(ctx, tracing.SpanCheckpoint)
	defer span.End()
	cp, tree, err := w.git.Checkpoint(ctx, w.dir, w.prepared, w.round,
		gitws.Handoff{SessionID: details.SessionID, Status: rep.Status, Summary: rep.Summary})
	if err != nil {
		err = w.stepError(ctx, fmt.Errorf("checkpoint round %d: %w", w.round.Round, err), details)
		tracing.Fail(span, "checkpoint_failed", err.Error())
		return nil, false, err
	}
	span.SetAttributes(tracing.AttrCommit.String(cp.Commit), tracing.AttrFilesChanged.Int(cp.FilesChanged))
	w.logger.Info("Checkpoint", "round", w.round.Round, "commit", cp.Commit, "parent", cp.Parent,
		"filesChanged", cp.FilesChanged, "insertions", cp.Insertions, "deletions", cp.Deletions)
	return &Checkpoint{Commit: cp.Commit, Parent: cp.Parent, FilesChanged: cp.FilesChanged,
		Insertions: cp.Insertions, Deletions: cp.Deletions}, tree != w.before, nil
}

// stepError maps a failed workspace step: a cancel stays a cancel; a push
// the remote rejected, a repository set up to run programs and a walk that
// met a directory it cannot read are ordinary child failures (a retry
// cannot help), and so is a tree past RALPH_WORKSPACE_MAX_MB or
// RALPH_WORKSPACE_MAX_FILES or one git was killed on for passing
// RALPH_GIT_MEMORY_MB (section 38: the attempt ends as at the disk bound); a workspace that cannot name a branch is bad input;
// anything else (disk, network) is retryable.
func (w *workspaceRound) stepError(ctx context.Context, err error, details FailureDetails) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := fmt.Sprintf("round %d: %v", w.round.Round, err)
	switch {
	case errors.Is(err, gitws.ErrPushRejected), errors.Is(err, gitws.ErrUnsafeRepo), isUnreadable(err),
		gitws.TreeFault(err): // a tree past the workspace bounds, or git killed on it: the attempt ends
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeChildFailed, nil, details)
	case errors.Is(err, gitws.ErrBadWorkspaceName):
		return temporal.NewNonRetryableApplicationError("bad round input: "+msg, ErrTypeBadRoundInput, nil)
	default:
		return temporal.NewApplicationError(msg, ErrTypeRoundError, details)
	}
}
