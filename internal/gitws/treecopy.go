package gitws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The verify's checkout, incremental (SPEC 41, "the queue's own cost"): a
// merge scratch used to write its whole tree out, every merge. Now a root
// worker whose commands run as another uid keeps, per scratch directory, a
// private copy of the last tree it checked out there (under the cache root
// in the session directory, which no command sees), brings it to the next
// commit with `git read-tree --reset -u` (only the paths that changed are
// written, and a path whose size or mtime no longer matches the copy's
// index is written again), and lends its files to the scratch by hard link.
// The command may write them in place, as in a checkout of its own, so the
// copy is checked when the scratch is given back:
//   - the copy is written only by the worker's git, from git objects, never
//     from a scratch; git replaces a file by unlink and create, so updating
//     the copy never writes an inode a scratch still links;
//   - when lending, the worker records each linked file's inode and ctime,
//     which every write, truncation, chmod, chown, touch or new link sets
//     and no process can set back (utimensat sets only atime and mtime);
//     when the scratch is given back (ForgetScratch, before it is removed,
//     after every process of the verify was killed), every file whose
//     ctime or inode moved is removed from the copy, and the next update
//     writes it again from the objects;
//   - the copy's marker is removed before an update and written when the
//     scratch is given back: a copy an update or a lend left half way (a
//     killed worker) is rebuilt from nothing.
// A worker whose commands run as itself checks out in full, as before.

// treeCopyMarker names, in a copy's directory, the file holding the commit
// its tree and index hold.
const treeCopyMarker = "ralph-tree"

// LendTreesTo makes scratches linked from private tree copies whose files
// belong, while lent, to uid and gid: the commands' (the sandbox's), which
// are not the worker's. A worker that is not root never lends.
func (g *Git) LendTreesTo(uid, gid int) {
	if os.Geteuid() == 0 && uid != 0 {
		g.treeOwner = &[2]int{uid, gid}
	}
}

// lendSettle outlasts the tick of the clock the kernel stamps ctimes with
// (1-10 ms).
const lendSettle = 15 * time.Millisecond

// treeCopy is one private copy: dir/tree, dir/index, dir/ralph-tree.
type treeCopy struct{ dir string }

func (t treeCopy) tree() string   { return filepath.Join(t.dir, "tree") }
func (t treeCopy) index() string  { return filepath.Join(t.dir, "index") }
func (t treeCopy) marker() string { return filepath.Join(t.dir, treeCopyMarker) }

// lentFile is a copy's file as it was lent.
type lentFile struct {
	ino   uint64
	ctime syscall.Timespec
}

// lent is a copy lent to a scratch until ForgetScratch gives it back.
type lent struct {
	copy   treeCopy
	commit string
	files  map[string]lentFile // relative path → as lent
	unlock func()
	// settled is when a command may first write the lent files: a write
	// within the clock's tick of their linking would keep their ctime, and
	// giveBack would miss it (LendSettled).
	settled time.Time
}

// maxTreeCopies bounds the copies of one cache: one a scratch checked out
// at once (lanes verify side by side); a scratch past it checks out in full.
const maxTreeCopies = 16

// treeCopies is where the copies of the scratch dir's cache live (ok false:
// check out in full). The copies are a pool per cache, not one a scratch
// directory: a lane's scratch (campaigns/<id>/lane-<n>) is new with every
// lane, and a copy each (the size of the tree) would grow without bound.
func (g *Git) treeCopies(dir string) (string, *scratchState, bool) {
	if g.treeOwner == nil || g.scratches == nil {
		return "", nil, false
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return "", nil, false
	}
	st := v.(*scratchState)
	sum := sha256.Sum256([]byte(st.cache.dir))
	return filepath.Join(g.cacheRoot, treesDirName, hex.EncodeToString(sum[:12])), st, true
}

// treesDirName holds the tree copies beside the object caches,
// candidatesDirName the candidates' shared base packs.
const (
	treesDirName      = "trees"
	candidatesDirName = "candidates"
)

// LendSettled is when a command may first write the scratch dir's files
// (zero: at once): a change stamped within the clock's tick of a lent
// file's linking would carry the same ctime, and the copy would keep it.
// The verify waits for it just before its command starts, so the wait
// overlaps the sandbox's setup instead of preceding it.
func (g *Git) LendSettled(dir string) time.Time {
	if g == nil || g.scratches == nil {
		return time.Time{}
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return time.Time{}
	}
	st := v.(*scratchState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lent == nil {
		return time.Time{}
	}
	return st.lent.settled
}

// lentCopy is the copy lent to the scratch dir now.
func (g *Git) lentCopy(dir string) (treeCopy, bool) {
	if g.scratches == nil {
		return treeCopy{}, false
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return treeCopy{}, false
	}
	st := v.(*scratchState)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lent == nil {
		return treeCopy{}, false
	}
	return st.lent.copy, true
}

// checkoutScratch checks commit out detached in the scratch dir (fresh from
// ScratchFrom: nothing but .git in it), lent from the private copy where
// there is one, else written in full. The caller checked the tree's bounds.
func (g *Git) checkoutScratch(ctx context.Context, dir, commit string) error {
	if pool, st, ok := g.treeCopies(dir); ok && st.lent == nil {
		err := g.lendCopy(ctx, pool, st, dir, commit)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// The copy failed (another file system, git killed): the full
		// checkout below over a cleared work tree still gives the right tree.
		if err := clearWorkTree(dir); err != nil {
			return err
		}
	}
	_, err := g.run(ctx, dir, cmdOpts{}, "checkout", "-q", "--detach", "--force", commit)
	return err
}

// errNoFreeCopy: every copy of the pool is lent (check out in full).
var errNoFreeCopy = errors.New("every tree copy is lent")

// lendCopy takes the first free copy of the pool, brings it to commit and
// links it into dir; the copy stays locked and unmarked until giveBack.
func (g *Git) lendCopy(ctx context.Context, pool string, st *scratchState, dir, commit string) error {
	var tc treeCopy
	var unlock func()
	for i := 0; i < maxTreeCopies && unlock == nil; i++ {
		tc = treeCopy{dir: fmt.Sprintf("%s-%d", pool, i)}
		unlock = objectCache(tc).tryLock() // the same directory lock as a cache
	}
	if unlock == nil {
		return errNoFreeCopy
	}
	l := &lent{copy: tc, commit: commit, unlock: unlock}
	if err := g.updateCopy(ctx, tc, dir, commit); err != nil {
		unlock()
		return err
	}
	var err error
	var newest time.Time
	if l.files, newest, err = g.linkCopy(ctx, tc, dir, commit); err != nil {
		unlock() // unmarked: rebuilt next time
		return err
	}
	l.settled = newest.Add(lendSettle)
	st.lent = l
	return nil
}

// updateCopy makes the copy hold commit's tree, from the scratch's objects,
// its files the commands' uid's.
func (g *Git) updateCopy(ctx context.Context, tc treeCopy, dir, commit string) error {
	if !pathExists(tc.marker()) {
		if err := os.RemoveAll(tc.dir); err != nil {
			return fmt.Errorf("remove the damaged tree copy %s: %w", tc.dir, err)
		}
	}
	if err := os.MkdirAll(tc.tree(), 0o700); err != nil {
		return fmt.Errorf("create the tree copy: %w", err)
	}
	if err := os.Remove(tc.marker()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open the tree copy: %w", err)
	}
	// checkStat=minimal: the owner changes below, ctime with every lend.
	if _, err := g.run(ctx, dir, cmdOpts{env: tc.env(dir)}, "-c", "core.checkStat=minimal", "-c", "core.trustctime=false",
		"read-tree", "--reset", "-u", commit); err != nil {
		return fmt.Errorf("bring the tree copy to %s: %w", shortID(commit), err)
	}
	return g.ownTree(tc.tree())
}

// copyEntries are the entries of the copy's index, read from its bytes
// (parseIndex), or listed by git when they cannot be.
func (g *Git) copyEntries(ctx context.Context, tc treeCopy, dir string, index []byte) ([]indexEntry, error) {
	if entries, err := parseIndex(index); err == nil {
		return entries, nil
	}
	out, err := g.run(ctx, dir, cmdOpts{env: tc.env(dir)}, "ls-files", "-s", "-z")
	if err != nil {
		return nil, err
	}
	var entries []indexEntry
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, name, ok := strings.Cut(rec, "\t")
		mode, err := strconv.ParseUint(strings.SplitN(meta, " ", 2)[0], 8, 32)
		if !ok || err != nil {
			return nil, fmt.Errorf("the tree copy's index holds %q", rec)
		}
		entries = append(entries, indexEntry{mode: uint32(mode), name: name})
	}
	return entries, nil
}

// env points the scratch's git at the copy's work tree and index.
func (tc treeCopy) env(dir string) []string {
	return []string{"GIT_DIR=" + filepath.Join(dir, ".git"), "GIT_WORK_TREE=" + tc.tree(), "GIT_INDEX_FILE=" + tc.index()}
}

// ownTree gives the copy's files (those git just wrote) to the commands'
// uid, as the sandbox gives a checkout's; its directories stay the
// worker's.
func (g *Git) ownTree(root string) error {
	uid, gid := g.treeOwner[0], g.treeOwner[1]
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if s := fi.Sys().(*syscall.Stat_t); int(s.Uid) != uid || int(s.Gid) != gid {
			return os.Lchown(path, uid, gid)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("give the tree copy to uid %d: %w", uid, err)
	}
	return nil
}

// linkCopy gives the scratch dir the copy's tree (exactly its index's
// entries: files by hard link, symlinks and submodule directories made
// anew), its index and a detached HEAD at commit. It returns each linked
// file as lent, and the newest ctime among them.
func (g *Git) linkCopy(ctx context.Context, tc treeCopy, dir, commit string) (map[string]lentFile, time.Time, error) {
	index, err := os.ReadFile(tc.index())
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read the tree copy's index: %w", err)
	}
	entries, err := g.copyEntries(ctx, tc, dir, index)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list the tree copy: %w", err)
	}
	files := map[string]lentFile{}
	made := map[string]bool{".": true}
	var newest time.Time
	for _, e := range entries {
		name := e.name
		if name == "" || name == ".git" || strings.HasPrefix(name, ".git/") {
			return nil, time.Time{}, fmt.Errorf("the tree copy's index holds %q", name)
		}
		rel := filepath.FromSlash(name)
		if parent := filepath.Dir(rel); !made[parent] {
			if err := os.MkdirAll(filepath.Join(dir, parent), 0o755); err != nil {
				return nil, time.Time{}, fmt.Errorf("link the tree copy: %w", err)
			}
			made[parent] = true
		}
		src, dst := filepath.Join(tc.tree(), rel), filepath.Join(dir, rel)
		switch e.mode {
		case 0o100644, 0o100755:
			if err = os.Link(src, dst); err == nil {
				var f lentFile
				if f, err = lentState(src); err == nil {
					files[rel] = f
					newest = later(newest, f.ctime)
				}
			}
		case 0o120000:
			var target string
			if target, err = os.Readlink(src); err == nil {
				err = os.Symlink(target, dst)
			}
		case 0o160000:
			err = os.Mkdir(dst, 0o755)
		default:
			err = fmt.Errorf("mode %06o", e.mode)
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("link %s from the tree copy: %w", name, err)
		}
	}
	if err := errors.Join(writeGitFile(dir, "index", index), os.Chmod(filepath.Join(dir, ".git", "index"), 0o644)); err != nil {
		return nil, time.Time{}, fmt.Errorf("give the scratch the copy's index: %w", err)
	}
	if err := writeGitFile(dir, "HEAD", []byte(commit+"\n")); err != nil {
		return nil, time.Time{}, fmt.Errorf("detach the scratch's HEAD: %w", err)
	}
	return files, newest, nil
}

func lentState(path string) (lentFile, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return lentFile{}, err
	}
	s := fi.Sys().(*syscall.Stat_t)
	return lentFile{ino: s.Ino, ctime: s.Ctim}, nil
}

func later(t time.Time, ts syscall.Timespec) time.Time {
	if u := time.Unix(ts.Sec, ts.Nsec); u.After(t) {
		return u
	}
	return t
}

// giveBack ends the lend of the scratch's copy: every file changed through
// a link (its ctime or inode moved) leaves the copy, then the copy is
// marked whole again. Called before the scratch is removed (which moves
// every ctime again).
func (l *lent) giveBack() {
	defer l.unlock()
	for rel, was := range l.files {
		path := filepath.Join(l.copy.tree(), rel)
		if now, err := lentState(path); err != nil || now != was {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return // unmarked: rebuilt next time
			}
		}
	}
	_ = os.WriteFile(l.copy.marker(), []byte(l.commit+"\n"), 0o400)
}

// clearWorkTree removes everything of the scratch dir but its .git.
func clearWorkTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clear the scratch: %w", err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("clear the scratch: %w", err)
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, ".git", "index")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear the scratch: %w", err)
	}
	return nil
}
