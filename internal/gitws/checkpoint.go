package gitws

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Checkpoint commits everything the work tree holds (`git add -A`,
// deletions included) when it differs from HEAD, and in remote mode pushes
// the commit to the branch. p is where the round started; p.Base becomes the
// checkpoint's Parent. tree is the work tree's id, the
// round's closing fingerprint.
//
// A push that fails keeps the commit on UnpushedRef; a rejected push is
// ErrPushRejected and its message names the commit.
func (g *Git) Checkpoint(ctx context.Context, dir string, p Prepared, r Round, h Handoff) (cp Checkpoint, tree string, err error) {
	return g.checkpoint(ctx, dir, p, r, h, false)
}

// checkpoint is Checkpoint; withStat also fills cp.DiffStat (a candidate's).
func (g *Git) checkpoint(ctx context.Context, dir string, p Prepared, r Round, h Handoff, withStat bool) (cp Checkpoint, tree string, err error) {
	// The session may have rewritten .git: check it again before git reads it.
	if err := g.checkRepo(ctx, dir); err != nil {
		return Checkpoint{}, "", err
	}
	spec, err := g.workPathspec(dir)
	if err != nil {
		return Checkpoint{}, "", err
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, append([]string{"add", "-A"}, spec...)...); err != nil {
		return Checkpoint{}, "", fmt.Errorf("stage the work tree: %w", err)
	}
	out, err := g.run(ctx, dir, cmdOpts{}, "write-tree")
	if err != nil {
		return Checkpoint{}, "", fmt.Errorf("write the work tree: %w", err)
	}
	tree = strings.TrimSpace(out)
	// A tree past the workspace bounds would be refused by every later
	// checkout of it: it is never committed.
	if err := g.checkTree(ctx, dir, tree, "the round's work tree"); err != nil {
		return Checkpoint{}, "", err
	}
	head, err := g.head(ctx, dir)
	if err != nil {
		return Checkpoint{}, "", err
	}
	if head == "" {
		return Checkpoint{}, "", errors.New("the workspace's HEAD names no commit after the session (was .git replaced?)")
	}
	headTree, err := g.treeOf(ctx, dir, head)
	if err != nil {
		return Checkpoint{}, "", err
	}
	commit := head
	if headTree != tree {
		if commit, err = g.commitTree(ctx, dir, tree, CheckpointMessage(r, h), head); err != nil {
			return Checkpoint{}, "", err
		}
		if err := g.setRef(ctx, dir, "HEAD", commit, head); err != nil {
			return Checkpoint{}, "", err
		}
	}
	cp = Checkpoint{Commit: commit, Parent: p.Base}
	if commit != p.Base {
		if err := g.stats(ctx, dir, p.Base, commit, &cp, withStat); err != nil {
			return Checkpoint{}, "", err
		}
	}
	if g.cfg.Mode == ModeRemote && commit != p.BranchHead {
		if err := g.push(ctx, dir, commit, Branch(r.Workspace)); err != nil {
			kept := UnpushedRef(r.WorkflowID, r.Round, r.Attempt)
			if rerr := g.setRef(context.WithoutCancel(ctx), dir, kept, commit, ""); rerr != nil {
				return cp, tree, fmt.Errorf("checkpoint %s not pushed (%w), and keeping it on %s failed: %v", commit, err, kept, rerr)
			}
			return cp, tree, fmt.Errorf("checkpoint %s of round %d not pushed to %s; the commit is kept in the worker's clone on %s: %w",
				commit, r.Round, Branch(r.Workspace), kept, err)
		}
	}
	if g.cfg.Mode == ModeRemote {
		if err := clearMarker(dir); err != nil {
			return cp, tree, err
		}
	}
	return cp, tree, nil
}
