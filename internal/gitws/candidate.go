package gitws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
// tree is the work tree's id (WorkTree) when the caller took it under the
// same workspace lock, "" to take it here: a candidate's attempt has just
// fingerprinted the workspace, and staging it again would cost a second
// scan of the work tree while its siblings wait for the lock.
func (g *Git) CommitEdits(ctx context.Context, dir string, r Round, tree string) (string, error) {
	head, err := g.head(ctx, dir)
	if err != nil {
		return "", err
	}
	if tree == "" {
		if tree, err = g.WorkTree(ctx, dir); err != nil {
			return "", err
		}
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

// StartCandidate makes dir a repository of its own holding only base and
// its history, checked out (detached) at base. What an earlier attempt left
// in dir goes: a candidate's retry starts over at the base, as a round's
// does. The objects come from one pack of base's history the round's
// candidates share (basePack), never from a clone: a clone would copy every
// object of the workspace (other candidates' work, abandoned attempts) and
// name the workspace's path in its reflog and origin.
func (g *Git) StartCandidate(ctx context.Context, main, dir, base string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove an earlier attempt's candidate tree: %w", err)
	}
	// git init's layout, without a git command; no reflog: its entries
	// would carry the worker's identity and host.
	if err := g.Scratch(ctx, dir); err != nil {
		return fmt.Errorf("create the candidate's tree: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "config"), []byte(candidateConfig), 0o644); err != nil {
		return fmt.Errorf("configure the candidate's repository: %w", err)
	}
	if err := g.basePack(ctx, main, dir, base); err != nil {
		return err
	}
	if err := writePackedRefs(dir, []ScratchRef{{Into: candidateBaseRef}}, map[ScratchRef]string{{Into: candidateBaseRef}: base}); err != nil {
		return err
	}
	if err := g.checkTree(ctx, dir, base, "the round's base "+shortID(base)); err != nil {
		return g.dropBasePack(main, base, err)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "checkout", "-q", "--detach", base); err != nil {
		return g.dropBasePack(main, base, fmt.Errorf("check out the round's base %s: %w", shortID(base), err))
	}
	return nil
}

// candidateConfig is a candidate repository's configuration: git init's,
// without a reflog.
const candidateConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = false\n"

// basePack gives the candidate repository dir the objects of base and its
// history, and nothing else of the workspace main: one pack written once
// per round (pack-objects of base, without delta search and at the fastest
// compression: a candidate's clone is thrown away when its attempt ends)
// under the worker's session directory, linked (or copied: see
// linkObjects) into each candidate's object store.
func (g *Git) basePack(ctx context.Context, main, dir, base string) error {
	sum := sha256.Sum256([]byte(main))
	shared := filepath.Join(g.cacheRoot, candidatesDirName, hex.EncodeToString(sum[:12]))
	mu, _ := cacheLocks.LoadOrStore(shared, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	packDir := filepath.Join(shared, base)
	if packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx")); len(packs) == 0 {
		// An earlier round's pack is of no use to this one.
		if err := os.RemoveAll(shared); err != nil {
			return fmt.Errorf("clear the candidates' shared pack: %w", err)
		}
		if err := os.MkdirAll(packDir, 0o700); err != nil {
			return fmt.Errorf("create the candidates' shared pack: %w", err)
		}
		if _, err := g.run(ctx, main, cmdOpts{stdin: base + "\n"}, "-c", "pack.window=0", "-c", "pack.compression=1",
			"pack-objects", "--revs", "-q", filepath.Join(packDir, "pack")); err != nil {
			_ = os.RemoveAll(packDir)
			return fmt.Errorf("pack the round's base %s for the candidates: %w", shortID(base), err)
		}
	}
	return linkObjects(packDir, filepath.Join(dir, ".git", "objects", "pack"))
}

// dropBasePack removes the candidates' shared pack of base after a
// candidate failed on it, so the next attempt writes it anew.
func (g *Git) dropBasePack(main, base string, err error) error {
	sum := sha256.Sum256([]byte(main))
	shared := filepath.Join(g.cacheRoot, candidatesDirName, hex.EncodeToString(sum[:12]))
	mu, _ := cacheLocks.LoadOrStore(shared, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	_ = os.RemoveAll(filepath.Join(shared, base))
	return err
}

// FinishCandidate commits what the candidate's tree dir holds onto base and
// keeps that commit on ref in the workspace repository main and, in remote
// mode, on the remote. tree is the work tree's id; cp.DiffStat its change
// from base ("" when unchanged).
func (g *Git) FinishCandidate(ctx context.Context, main, dir, base, ref string, r Round, h Handoff) (cp Checkpoint, tree string, err error) {
	local := *g
	local.cfg.Mode = ModeLocal // the candidate's own clone pushes nothing
	if cp, tree, err = local.checkpoint(ctx, dir, Prepared{Base: base}, r, h, true); err != nil {
		return Checkpoint{}, "", err
	}
	if err := g.fetchCommit(ctx, main, dir, cp.Commit, ref); err != nil {
		return Checkpoint{}, "", err
	}
	if g.cfg.Mode == ModeRemote {
		if err := g.pushRef(ctx, main, "+"+cp.Commit+":"+ref); err != nil {
			return Checkpoint{}, "", err
		}
	}
	return cp, tree, nil
}

// fetchCommit fetches commit, the candidate repository dir's HEAD, into ref
// of main. One git fetch: the commit is known, so no ls-remote asks for it
// and no rev-parse reads the ref back; the fetch fails if dir lacks it.
// HEAD advertises it, so a server speaking protocol v0 hands it out too.
func (g *Git) fetchCommit(ctx context.Context, main, dir, commit, ref string) error {
	if _, err := g.run(ctx, main, cmdOpts{}, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
		"--", dir, "+"+commit+":"+ref); err != nil {
		return fmt.Errorf("fetch candidate commit %s into %s: %w", shortID(commit), ref, err)
	}
	return nil
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
