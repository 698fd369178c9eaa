package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/report"
)

// AdoptCandidateName is the activity that makes a round's chosen candidate
// the workspace's checkpoint.
const AdoptCandidateName = "AdoptCandidate"

// Values of RALPH_CANDIDATE_SCORE.
const (
	CandidateScoreNone   = "none"
	CandidateScoreVerify = "verify"
)

// CandidatesDir is the directory under the workspace root that holds the
// candidates' trees while they run; no workspace may be named after it.
const CandidatesDir = ".ralph-candidates"

// CandidateSpec makes a round attempt one of the round's candidates.
type CandidateSpec struct {
	// Number is the candidate's place (1-based) among Of.
	Number int `json:"number"`
	Of     int `json:"of"`
	// Agent and Model are the candidate's provider (a RALPH_AGENT value)
	// and model; empty: the worker's RALPH_AGENT and RALPH_MODEL.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// ScoreVerify: a candidate that does not complete runs the verify
	// command on its tree anyway, so the choice can rank it.
	ScoreVerify bool `json:"scoreVerify,omitempty"`
}

// GetNumber is the spec's Number, 0 for none (a plain round).
func (s *CandidateSpec) GetNumber() int {
	if s == nil {
		return 0
	}
	return s.Number
}

// CandidateWork is what a candidate attempt adds to its round output.
type CandidateWork struct {
	// Agent is the provider that ran it and Model the model it was
	// configured with, both resolved (also when the worker's defaults).
	Agent string `json:"agent"`
	Model string `json:"model,omitempty"`
	// Ref keeps its commit until it is adopted.
	Ref string `json:"ref"`
	// DiffStat is git's --stat summary of its change from the round's base.
	DiffStat string `json:"diffStat,omitempty"`
	// Verification is the verify command's run on its tree
	// (RALPH_CANDIDATE_SCORE=verify, a candidate that did not complete).
	Verification *report.Verification `json:"verification,omitempty"`
	// Unchanged: its tree equals the round's base (it ranks after every
	// candidate with its outcome that changed something). Absent in
	// histories from before, whose choice ranked it by its diff alone.
	Unchanged bool `json:"unchanged,omitempty"`
}

// CandidateFailure is what a failed or cancelled candidate attempt's
// FailureDetails say: who ran it (resolved, as in CandidateWork) and the ref
// that keeps what its tree held ("" when that could not be kept).
type CandidateFailure struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Ref      string `json:"ref,omitempty"`
}

// AdoptInput names the chosen candidate's commit, a child of Base kept on Ref.
type AdoptInput struct {
	Workspace string `json:"workspace"`
	Round     int    `json:"round"`
	MaxRounds int    `json:"maxRounds"`
	Base      string `json:"base"`
	Commit    string `json:"commit"`
	Ref       string `json:"ref"`
}

// candidateTree is one candidate's own clone of the workspace, under
// CandidatesDir, and the lock that keeps a retried attempt off it.
type candidateTree struct {
	spec      CandidateSpec
	workspace *workspaceRound
	name      string // relative to the workspace root; also its lock's name
	dir       string
	base      string
	ref       string
}

// beginCandidate names the candidate's tree at the prepared workspace's
// base. Call it holding the workspace's lock: in local mode a person's
// uncommitted edits are committed first, so every candidate starts from
// them. The tree itself is made by start, under the candidate's own lock.
//
// The second and third candidates of a round still prepare the workspace
// themselves: what the first saw (its HEAD, its work tree) may have changed
// since it released the lock (a person's edit, a rewind), and the check
// that would tell (staging the work tree) is the fingerprint they take
// anyway; skipping only saves a rev-parse and the .git check.
func (a *Activities) beginCandidate(ctx context.Context, w *workspaceRound, spec CandidateSpec, details FailureDetails) (*candidateTree, error) {
	if w.git == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			"bad round input: round candidates need RALPH_GIT=local or remote; this worker has RALPH_GIT=off", ErrTypeBadRoundInput, nil)
	}
	base := w.prepared.Base
	var err error
	if w.git.Config().Mode == gitws.ModeLocal {
		// Prepare read HEAD (the base) and w.before is the work tree's
		// id, both under this same lock.
		if base, err = w.git.CommitEdits(ctx, w.dir, w.round, base, w.before); err != nil {
			return nil, w.stepError(ctx, fmt.Errorf("commit the workspace's edits: %w", err), details)
		}
	}
	name := filepath.Join(CandidatesDir, names.Flat(w.round.WorkflowID), fmt.Sprintf("round-%d-%d", w.round.Round, spec.Number))
	return &candidateTree{spec: spec, workspace: w, name: name, dir: filepath.Join(a.cfg.WorkspaceRoot, name), base: base,
		ref: gitws.CandidateRef(w.round.WorkflowID, w.round.Round, spec.Number)}, nil
}

// start makes the candidate's repository at its base. It only reads the
// workspace's objects (of base, a commit no one moves), so it runs under
// the candidate's own lock, not the workspace's: the round's other
// candidates start theirs meanwhile instead of queueing behind it. A
// half-made one (a refused base included) is the caller's to remove.
func (c *candidateTree) start(ctx context.Context, details FailureDetails) error {
	w := c.workspace
	if err := w.git.StartCandidate(ctx, w.dir, c.dir, c.base); err != nil {
		return w.stepError(ctx, err, details)
	}
	return nil
}

// finish commits the candidate's tree, keeps the commit on its ref and
// says whether it changed anything.
func (c *candidateTree) finish(ctx context.Context, rep report.Report, details FailureDetails) (*Checkpoint, bool, *CandidateWork, error) {
	w := c.workspace
	cp, tree, err := w.git.FinishCandidate(ctx, w.dir, c.dir, c.base, c.ref, w.round,
		gitws.Handoff{SessionID: details.SessionID, Status: rep.Status, Summary: rep.Summary})
	if err != nil {
		return nil, false, nil, w.stepError(ctx, fmt.Errorf("keep candidate %d's work: %w", c.spec.Number, err), details)
	}
	// The diff stat came with the checkpoint's line counts: one git command.
	work := &CandidateWork{Agent: c.spec.Agent, Ref: c.ref, Unchanged: cp.Commit == c.base, DiffStat: cp.DiffStat}
	w.logger.Info("Candidate kept", "round", w.round.Round, "candidate", c.spec.Number, "commit", cp.Commit, "ref", c.ref)
	return &Checkpoint{Commit: cp.Commit, Parent: cp.Parent, FilesChanged: cp.FilesChanged,
		Insertions: cp.Insertions, Deletions: cp.Deletions}, tree != w.before, work, nil
}

// keepTimeout bounds keeping a failed candidate's tree: it runs after a
// cancel too, so it cannot use the attempt's context.
const keepTimeout = 2 * time.Minute

// keep commits what a candidate whose session ended with err holds onto the
// round's base and keeps it on the candidate's ref, as finish does for one
// that handed off; it returns the ref, or "" (logged) when that failed.
func (c *candidateTree) keep(ctx context.Context, err error) string {
	w := c.workspace
	why := "failed"
	if ctx.Err() != nil {
		why = "cancelled"
	} else if _, ok := agent.AsDeferred(err); ok {
		why = "deferred"
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	commit, kerr := w.git.KeepCandidate(kctx, w.dir, c.dir, c.base, c.ref, w.round, c.spec.Number, why)
	if kerr != nil {
		w.logger.Warn("Could not keep a candidate's work", "round", w.round.Round, "candidate", c.spec.Number, "error", kerr)
		return ""
	}
	w.logger.Info("Candidate kept", "round", w.round.Round, "candidate", c.spec.Number, "outcome", why, "commit", commit, "ref", c.ref)
	return c.ref
}

// remove deletes the candidate's tree: its work is on its ref by now, or
// the attempt failed and a retry starts over.
func (c *candidateTree) remove(ctx context.Context) {
	if err := os.RemoveAll(c.dir); err != nil {
		activity.GetLogger(ctx).Warn("Could not remove a candidate's tree", "dir", c.dir, "error", err)
	}
}

// scoreCandidate runs the verify command on a candidate's tree when the
// round ranks candidates by it, protecting the run's and the worker's paths
// as the round's own verify does (a score that changed one fails); a run
// that cannot start ranks it unverified.
func (a *Activities) scoreCandidate(ctx context.Context, c *candidateTree, in RoundInput, rep report.Report, work *CandidateWork) {
	if !c.spec.ScoreVerify || in.VerifyCommand == "" || rep.Status == report.StatusComplete {
		return
	}
	v, cache, err := a.verifyTreeWarm(ctx, c.dir, in.VerifyCommand, ToolCacheLine(in.Workspace), a.protectedSets(in.ProtectedPaths...))
	_ = cache.Remove() // a candidate's writes reach no line
	if err != nil {
		activity.GetLogger(ctx).Warn("Could not score a candidate with the verify command", "candidate", c.spec.Number, "error", err)
		return
	}
	work.Verification = v
}

// AdoptCandidate makes the round's chosen candidate the workspace's
// checkpoint: the workspace's branch (and in remote mode the remote
// branch, fast-forward only) moves to its commit. Idempotent.
func (a *Activities) AdoptCandidate(ctx context.Context, in AdoptInput) error {
	if a.git == nil {
		return temporal.NewNonRetryableApplicationError("round candidates need RALPH_GIT=local or remote", ErrTypeBadRoundInput, nil)
	}
	if err := CheckWorkspace(in.Workspace); err != nil {
		return temporal.NewNonRetryableApplicationError("bad round input: workspace "+err.Error(), ErrTypeBadRoundInput, nil)
	}
	dir, err := a.prepareWorkspace(in.Workspace)
	if err != nil {
		return err
	}
	lock, err := a.lockWorkspace(ctx, in.Workspace, func() {})
	if err != nil {
		return err
	}
	defer lock.release()
	r := gitws.Round{WorkflowID: activity.GetInfo(ctx).WorkflowExecution.ID, Workspace: in.Workspace, Round: in.Round, MaxRounds: in.MaxRounds}
	err = a.git.Adopt(ctx, dir, r, in.Base, in.Commit, in.Ref)
	if errors.Is(err, gitws.ErrWorkspaceMoved) || errors.Is(err, gitws.ErrPushRejected) || gitws.TreeFault(err) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("round %d: adopt the chosen candidate: %v", in.Round, err), ErrTypeChildFailed, nil)
	}
	return err
}
