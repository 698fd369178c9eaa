package gitws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrBadWorkspaceName: the workspace cannot name a git branch.
var ErrBadWorkspaceName = errors.New("workspace name is not a valid git branch name")

// Prepared is where a round starts.
type Prepared struct {
	// Base is the checkpoint the round starts from (HEAD after Prepare).
	Base string
	// BranchHead is the remote branch's head when it already existed
	// (remote mode); a checkpoint equal to it needs no push.
	BranchHead string
	// Abandoned is the ref that now holds a lost attempt's leftovers, and
	// AbandonedCommit its commit ("" when there were none).
	Abandoned       string
	AbandonedCommit string
	// Rewound is the ref that holds what a rewound run's workspace held
	// (later rounds, uncommitted changes), and RewoundCommit its commit.
	Rewound       string
	RewoundCommit string
}

// Prepare makes dir ready for round r's session.
//
// local: dir becomes a work tree when it is not one (with an empty first
// commit). At attempt > 1 what the lost attempt left uncommitted is saved on
// AbandonedRef(r.Round, r.Attempt-1) and the tree reset to the last
// checkpoint; at attempt 1 uncommitted changes (a person's edits between
// rounds) stay and become part of this round's checkpoint.
//
// remote: the branch ralph/<workspace> is fetched into dir (created from the
// remote's default branch, or an empty first commit, on the first round) and
// checked out. dir is this worker's own clone, so anything found there that
// the branch does not hold is an earlier attempt's leftover: it is saved on
// an abandoned ref and the tree reset to the branch head. People change a
// remote workspace by pushing to its branch.
func (g *Git) Prepare(ctx context.Context, dir string, r Round) (Prepared, error) {
	if err := g.ensureRepo(ctx, dir); err != nil {
		return Prepared{}, err
	}
	if err := g.checkRepo(ctx, dir); err != nil {
		return Prepared{}, err
	}
	if g.cfg.Mode == ModeRemote {
		return g.prepareRemote(ctx, dir, r)
	}
	return g.prepareLocal(ctx, dir, r)
}

// ensureRepo runs git init in dir unless dir/.git exists. The template is
// empty: no sample hooks, nothing but what git needs.
func (g *Git) ensureRepo(ctx context.Context, dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("inspect %s: %w", filepath.Join(dir, ".git"), err)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "init", "-q", "--template=", "."); err != nil {
		return fmt.Errorf("initialise the workspace repository: %w", err)
	}
	return nil
}

func (g *Git) prepareLocal(ctx context.Context, dir string, r Round) (Prepared, error) {
	base, err := g.head(ctx, dir)
	if err != nil {
		return Prepared{}, err
	}
	if base == "" {
		if base, err = g.firstCommit(ctx, dir); err != nil {
			return Prepared{}, err
		}
	}
	p := Prepared{Base: base}
	if p.Rewound, p.RewoundCommit, err = g.rewind(ctx, dir, base, r); err != nil {
		return Prepared{}, fmt.Errorf("restore the checkpoint of a rewound run: %w", err)
	}
	if p.Rewound != "" {
		p.Base = r.Checkpoint
		base = r.Checkpoint
	}
	if r.Attempt > 1 {
		ref := AbandonedRef(r.WorkflowID, r.Round, r.Attempt-1)
		if p.AbandonedCommit, err = g.saveLeftovers(ctx, dir, base, ref, r.WorkflowID, r.Round, r.Attempt-1); err != nil {
			return Prepared{}, err
		}
		if p.AbandonedCommit != "" {
			p.Abandoned = ref
		}
		if err := g.resetTo(ctx, dir, base); err != nil {
			return Prepared{}, err
		}
	}
	return p, nil
}

// firstCommit points HEAD at a new empty root commit.
func (g *Git) firstCommit(ctx context.Context, dir string) (string, error) {
	tree, err := g.emptyTree(ctx, dir)
	if err != nil {
		return "", err
	}
	commit, err := g.commitTree(ctx, dir, tree, "ralph: workspace initialised\n")
	if err != nil {
		return "", err
	}
	if err := g.setRef(ctx, dir, "HEAD", commit, ""); err != nil {
		return "", err
	}
	return commit, nil
}

// saveLeftovers commits what the work tree holds beyond head (head may be
// "" while HEAD is unborn) on ref and returns that commit, or "" when the
// tree holds nothing beyond head.
func (g *Git) saveLeftovers(ctx context.Context, dir, head, ref, workflowID string, round, attempt int) (string, error) {
	tree, err := g.WorkTree(ctx, dir)
	if err != nil {
		return "", err
	}
	var parents []string
	if head != "" {
		headTree, err := g.treeOf(ctx, dir, head)
		if err != nil {
			return "", err
		}
		if headTree == tree {
			return "", nil
		}
		parents = []string{head}
	} else if empty, err := g.emptyTree(ctx, dir); err != nil {
		return "", err
	} else if empty == tree {
		return "", nil
	}
	commit, err := g.commitTree(ctx, dir, tree, abandonedMessage(workflowID, round, attempt), parents...)
	if err != nil {
		return "", err
	}
	if err := g.setRef(ctx, dir, ref, commit, ""); err != nil {
		return "", err
	}
	return commit, nil
}

// resetTo makes the index and work tree match commit (HEAD's branch moves
// there) and removes untracked files; ignored files (caches, build output)
// stay, as they were never part of a checkpoint.
func (g *Git) resetTo(ctx context.Context, dir, commit string) error {
	if err := g.checkTree(ctx, dir, commit, "commit "+shortID(commit)); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "reset", "-q", "--hard", commit); err != nil {
		return fmt.Errorf("reset the work tree to %s: %w", commit, err)
	}
	spec, err := g.workPathspec(dir)
	if err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, append([]string{"clean", "-q", "-f", "-d"}, spec...)...); err != nil {
		return fmt.Errorf("remove untracked files: %w", err)
	}
	return nil
}
