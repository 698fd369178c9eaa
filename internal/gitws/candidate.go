package gitws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// A round's candidates (several fresh agents on one round) each work a
// clone of the workspace at the round's base: a repository of their own,
// so a candidate's sandbox holds nothing of the workspace's .git or of
// another candidate. Each candidate's commit is kept on CandidateRef; the
// chosen one becomes the workspace's next checkpoint (Adopt).

// CandidateRefPrefix keeps every candidate's work:
// refs/ralph/candidates/<workflow id>/round-<R>/<k>.
const CandidateRefPrefix = "refs/ralph/candidates/"

// CandidateRef names where candidate k of round keeps its commit.
func CandidateRef(workflowID string, round, k int) string {
	return fmt.Sprintf("%s%s/round-%d/%d", CandidateRefPrefix, refComponent(workflowID), round, k)
}

// CommitEdits commits what the workspace dir holds beyond HEAD (a person's
// edits between rounds, local mode) onto HEAD's branch and returns HEAD,
// so every candidate starts from those edits and adopting one loses none.
func (g *Git) CommitEdits(ctx context.Context, dir string, r Round) (string, error) {
	head, err := g.head(ctx, dir)
	if err != nil {
		return "", err
	}
	tree, err := g.WorkTree(ctx, dir)
	if err != nil {
		return "", err
	}
	headTree, err := g.treeOf(ctx, dir, head)
	if err != nil || headTree == tree {
		return head, err
	}
	msg := fmt.Sprintf("ralph: edits found before round %d's candidates\n\n%s: %s\n%s: %d\n",
		r.Round, TrailerWorkflowID, oneLine(r.WorkflowID), TrailerRound, r.Round)
	commit, err := g.commitTree(ctx, dir, tree, msg, head)
	if err != nil {
		return "", err
	}
	return commit, g.setRef(ctx, dir, "HEAD", commit, head)
}

// candidateBaseRef holds the round's base in a candidate's repository.
const candidateBaseRef = "refs/ralph/base"

// candidateUploadPack packs a candidate's objects the cheap way: no delta
// search (a clone copied the files; packing 2,000 incompressible blobs with
// git's defaults took three times its CPU) and the fastest compression
// level. The clone is thrown away when its attempt ends.
const candidateUploadPack = "git -c pack.window=0 -c pack.compression=1 upload-pack"

// StartCandidate makes dir a repository of its own holding only base and
// its history, checked out (detached) at base. What an earlier attempt left
// in dir goes: a candidate's retry starts over at the base, as a round's
// does. The objects are fetched, never cloned: a clone would copy every
// object of the workspace (other candidates' work, abandoned attempts) and
// name the workspace's path in its reflog and origin; the fetch's source is
// passed on the command line and stored nowhere.
func (g *Git) StartCandidate(ctx context.Context, main, dir, base string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove an earlier attempt's candidate tree: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create the candidate's tree: %w", err)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "init", "-q", "--template=", "."); err != nil {
		return fmt.Errorf("initialise the candidate's repository: %w", err)
	}
	// No reflog: its entries would carry the worker's identity and host.
	if _, err := g.run(ctx, dir, cmdOpts{}, "config", "core.logAllRefUpdates", "false"); err != nil {
		return fmt.Errorf("configure the candidate's repository: %w", err)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--upload-pack="+candidateUploadPack, "--", main, "+"+base+":"+candidateBaseRef); err != nil {
		return fmt.Errorf("fetch the round's base %s for a candidate: %w", shortID(base), err)
	}
	if err := g.checkTree(ctx, dir, base, "the round's base "+shortID(base)); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "checkout", "-q", "--detach", base); err != nil {
		return fmt.Errorf("check out the round's base %s: %w", shortID(base), err)
	}
	return nil
}

// FinishCandidate commits what the candidate's tree dir holds onto base and
// keeps that commit on ref in the workspace repository main and, in remote
// mode, on the remote. tree is the work tree's id.
func (g *Git) FinishCandidate(ctx context.Context, main, dir, base, ref string, r Round, h Handoff) (cp Checkpoint, tree string, err error) {
	local := *g
	local.cfg.Mode = ModeLocal // the candidate's own clone pushes nothing
	if cp, tree, err = local.Checkpoint(ctx, dir, Prepared{Base: base}, r, h); err != nil {
		return Checkpoint{}, "", err
	}
	if _, err := g.fetch(ctx, main, dir, "HEAD", ref); err != nil {
		return Checkpoint{}, "", err
	}
	if g.cfg.Mode == ModeRemote {
		if err := g.pushRef(ctx, main, "+"+cp.Commit+":"+ref); err != nil {
			return Checkpoint{}, "", err
		}
	}
	return cp, tree, nil
}

// ErrWorkspaceMoved: the workspace is no longer at the round's base, so no
// candidate can become its checkpoint without losing what moved it.
var ErrWorkspaceMoved = errors.New("the workspace moved away from the round's base")

// Adopt makes the chosen candidate's commit (kept on ref, a child of base)
// the workspace's checkpoint: its branch moves there (and in remote mode the
// remote branch, fast-forward only) and ref is dropped, as the branch holds
// the commit. Adopting again is a no-op.
func (g *Git) Adopt(ctx context.Context, dir string, r Round, base, commit, ref string) error {
	head, err := g.head(ctx, dir)
	if err != nil {
		return err
	}
	if head != commit {
		if head != base {
			return fmt.Errorf("%w: HEAD is %s, the base was %s", ErrWorkspaceMoved, shortID(head), shortID(base))
		}
		if g.cfg.Mode == ModeRemote {
			if err := g.push(ctx, dir, commit, Branch(r.Workspace)); err != nil {
				return err
			}
		}
		if err := g.resetTo(ctx, dir, commit); err != nil {
			return err
		}
	}
	if g.cfg.Mode == ModeRemote {
		if err := clearMarker(dir); err != nil {
			return err
		}
	}
	if kept, err := g.resolve(ctx, dir, ref); err != nil || kept == "" {
		return err // dropped by an earlier attempt
	}
	if g.cfg.Mode == ModeRemote {
		if err := g.pushRef(ctx, dir, ":"+ref); err != nil {
			return err
		}
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "update-ref", "-d", ref); err != nil {
		return fmt.Errorf("drop %s: %w", ref, err)
	}
	return nil
}

// pushRef pushes one refspec to the remote.
func (g *Git) pushRef(ctx context.Context, dir, refspec string) error {
	if _, err := g.run(ctx, dir, cmdOpts{}, "push", "-q", "--no-verify", "--", g.cfg.Remote, refspec); err != nil {
		return fmt.Errorf("push %s to %s: %w", strings.TrimPrefix(refspec, "+"), RedactURL(g.cfg.Remote), err)
	}
	return nil
}
