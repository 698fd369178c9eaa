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
// head is HEAD and tree the work tree's id (WorkTree) when the caller took
// them under the same workspace lock (Prepare's Base, the attempt's opening
// fingerprint), "" to read them here: the candidates' siblings wait for the
// lock meanwhile. HEAD moved since is caught by the update-ref.
func (g *Git) CommitEdits(ctx context.Context, dir string, r Round, head, tree string) (string, error) {
	var err error
	if head == "" {
		if head, err = g.head(ctx, dir); err != nil {
			return "", err
		}
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
	g.wrote.add(commit, tree)
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
// name the workspace's path in its reflog and origin. The checkout's index
// is copied where only the worker reads it (candidateIndex), for the
// commit of the candidate's tree.
func (g *Git) StartCandidate(ctx context.Context, main, dir, base string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove an earlier attempt's candidate tree: %w", err)
	}
	idx := g.candidateIndex(dir)
	if err := os.Remove(idx); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove an earlier attempt's candidate index: %w", err)
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
	return keepIndex(dir, idx)
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
// from base ("" when unchanged, and cp.Commit is then base itself).
//
// The commit is made in main (candidateTree): no git command reads dir's
// .git, and no fetch carries the commit over: add, write-tree, diff-tree,
// commit-tree and update-ref (and the bound's ls-tree for a tree not
// summed before), where a commit in the candidate's own repository and a
// fetch took ten commands.
func (g *Git) FinishCandidate(ctx context.Context, main, dir, base, ref string, r Round, h Handoff) (cp Checkpoint, tree string, err error) {
	if tree, err = g.candidateTree(ctx, main, dir); err != nil {
		return Checkpoint{}, "", err
	}
	// A tree past the workspace bounds would be refused by every later
	// checkout of it: it is never committed.
	if err := g.checkTree(ctx, main, tree, "the candidate's work tree"); err != nil {
		return Checkpoint{}, "", err
	}
	// Line counts, the diff stat and whether it changed anything: one
	// diff-tree of base against the tree, before there is a commit.
	cp = Checkpoint{Commit: base, Parent: base}
	if err := g.stats(ctx, main, base, tree, &cp, true); err != nil {
		return Checkpoint{}, "", err
	}
	if cp.FilesChanged > 0 {
		if cp.Commit, err = g.commitTree(ctx, main, tree, CheckpointMessage(r, h), base); err != nil {
			return Checkpoint{}, "", err
		}
		// Its tree was summed just now: adopting it need not sum it
		// again, nor the next round's CommitEdits read it.
		g.inBounds.add(cp.Commit)
		g.wrote.add(cp.Commit, tree)
	}
	if err := g.setRef(ctx, main, ref, cp.Commit, ""); err != nil {
		return Checkpoint{}, "", err
	}
	if g.cfg.Mode == ModeRemote {
		if err := g.pushRef(ctx, main, "+"+cp.Commit+":"+ref); err != nil {
			return Checkpoint{}, "", err
		}
	}
	return cp, tree, nil
}

// candidateIndex is where the worker keeps a copy of the index the
// checkout of candidate tree dir wrote: outside the tree and every
// sandbox, so nothing the candidate does to its own .git changes what the
// worker's git hashes, or trusts unhashed, when it commits the tree.
func (g *Git) candidateIndex(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(g.cacheRoot, candidatesDirName, "index-"+hex.EncodeToString(sum[:12]))
}

// keepIndex copies the candidate repository dir's fresh index to idx, with
// its modification time: git's check for racily clean entries compares
// the files' times with the index's.
func keepIndex(dir, idx string) error {
	if err := os.MkdirAll(filepath.Dir(idx), 0o700); err != nil {
		return fmt.Errorf("keep the candidate's index: %w", err)
	}
	if err := copyIndex(dir, idx); err != nil {
		return fmt.Errorf("keep the candidate's index: %w", err)
	}
	fi, err := os.Stat(filepath.Join(dir, ".git", "index"))
	if err != nil {
		return fmt.Errorf("keep the candidate's index: %w", err)
	}
	return os.Chtimes(idx, fi.ModTime(), fi.ModTime())
}

// candidateTree stages the candidate tree dir, as a work tree of the
// workspace repository main, into the worker's copy of its index
// (candidateIndex, removed after) and writes the tree. Its new blobs and
// trees go straight into main's object store; the files the session left
// alone keep their index entries (the base's blobs, all in main) and are
// not hashed again. A copy that is missing (an attempt that failed before
// its checkout) only costs hashing every file. git reads main's
// repository and the neutral attributes, never dir's .git: the top-level
// .git is no path git adds, and nested repositories are left out as in a
// workspace (workPathspec).
func (g *Git) candidateTree(ctx context.Context, main, dir string) (string, error) {
	idx := g.candidateIndex(dir)
	defer os.Remove(idx)
	spec, err := g.workPathspec(dir)
	if err != nil {
		return "", err
	}
	opts := cmdOpts{env: []string{"GIT_DIR=" + filepath.Join(main, ".git"), "GIT_WORK_TREE=" + dir, "GIT_INDEX_FILE=" + idx}}
	if _, err := g.run(ctx, main, opts, append([]string{"add", "-A"}, spec...)...); err != nil {
		return "", fmt.Errorf("stage the candidate's tree: %w", err)
	}
	out, err := g.run(ctx, main, opts, "write-tree")
	if err != nil {
		return "", fmt.Errorf("write the candidate's tree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// ErrWorkspaceMoved: the workspace is no longer at the round's base, so no
// candidate can become its checkpoint without losing what moved it.
var ErrWorkspaceMoved = errors.New("the workspace moved away from the round's base")

// Adopt makes the chosen candidate's commit (kept on ref, a child of base)
// the workspace's checkpoint: its branch moves there (and in remote mode the
// remote branch, fast-forward only) and ref is dropped, as the branch holds
// the commit. Adopting again is a no-op. Local mode: adoptLocal.
func (g *Git) Adopt(ctx context.Context, dir string, r Round, base, commit, ref string) error {
	if g.cfg.Mode == ModeLocal {
		return g.adoptLocal(ctx, dir, base, commit, ref)
	}
	head, err := g.head(ctx, dir)
	if err != nil {
		return err
	}
	if head != commit {
		if head != base {
			return fmt.Errorf("%w: HEAD is %s, the base was %s", ErrWorkspaceMoved, shortID(head), shortID(base))
		}
		if err := g.push(ctx, dir, commit, Branch(r.Workspace)); err != nil {
			return err
		}
		if err := g.resetTo(ctx, dir, commit); err != nil {
			return err
		}
	}
	if err := clearMarker(dir); err != nil {
		return err
	}
	if kept, err := g.resolve(ctx, dir, ref); err != nil || kept == "" {
		return err // dropped by an earlier attempt
	}
	if err := g.pushRef(ctx, dir, ":"+ref); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, "update-ref", "-d", ref); err != nil {
		return fmt.Errorf("drop %s: %w", ref, err)
	}
	return nil
}

// adoptLocal is Adopt in local mode, in three commands: one update-ref
// transaction moves HEAD's branch from base to commit (compare and swap,
// so git checks the workspace did not move) and drops ref (a ref already
// gone is no failure), then reset and clean bring the index and work tree
// there. A failed swap reads HEAD: at commit, an earlier attempt moved it,
// and reset runs only when the index is not at commit yet (that attempt
// stopped before its reset; a person's edits since a whole adoption
// stay); anywhere else the workspace moved away from the base.
func (g *Git) adoptLocal(ctx context.Context, dir, base, commit, ref string) error {
	// The bound comes before anything moves (mostly remembered from the
	// candidate's commit: no command).
	if err := g.checkTree(ctx, dir, commit, "commit "+shortID(commit)); err != nil {
		return err
	}
	tx := fmt.Sprintf("update HEAD %s %s\ndelete %s\n", commit, base, ref)
	if _, err := g.run(ctx, dir, cmdOpts{stdin: tx}, "update-ref", "-m", "ralph: adopt a candidate", "--stdin"); err != nil {
		head, herr := g.head(ctx, dir)
		switch {
		case herr != nil:
			return errors.Join(fmt.Errorf("move the workspace to %s: %w", shortID(commit), err), herr)
		case head != commit:
			return fmt.Errorf("%w: HEAD is %s, the base was %s", ErrWorkspaceMoved, shortID(head), shortID(base))
		}
		if _, err := g.run(ctx, dir, cmdOpts{}, "update-ref", "-d", ref); err != nil {
			return fmt.Errorf("drop %s: %w", ref, err)
		}
		_, err := g.run(ctx, dir, cmdOpts{}, "diff-index", "--cached", "--quiet", commit, "--")
		var ge *gitError
		if !errors.As(err, &ge) || ge.exitCode != 1 {
			return err // nil: the earlier attempt's reset ran
		}
	}
	return g.resetTo(ctx, dir, commit)
}

// pushRef pushes one refspec to the remote.
func (g *Git) pushRef(ctx context.Context, dir, refspec string) error {
	if _, err := g.run(ctx, dir, cmdOpts{}, "push", "-q", "--no-verify", "--", g.cfg.Remote, refspec); err != nil {
		return fmt.Errorf("push %s to %s: %w", strings.TrimPrefix(refspec, "+"), RedactURL(g.cfg.Remote), err)
	}
	return nil
}
