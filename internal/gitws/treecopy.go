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
	"strings"
)

// The verify's checkout, incremental (SPEC 41, "the queue's own cost"): a
// merge scratch used to write its whole tree out, every merge. Now a root
// worker keeps, per campaign and object cache, a private copy of the last
// tree it checked out (under the cache root in the session directory, which
// no command sees), brings it to the next commit with `git read-tree
// --reset -u` (only the paths that changed are written, and every path
// whose stat no longer matches the copy's index is written again), and
// hard-links its files into the scratch. Why a command cannot poison it:
//   - the copy is written only by the worker's git, from git objects; never
//     from a scratch;
//   - git replaces a file by unlink and create, never in place, so updating
//     the copy never writes an inode a scratch still links;
//   - its files are root's and lose every write bit: the command (another
//     uid) can neither write, truncate, chmod nor touch one through its
//     link (the sandbox leaves multiply linked files to their owner); it
//     can only unlink or rename its own link, in directories of its scratch,
//     which are new ones;
//   - the copy's marker (the commit it holds) is removed before and written
//     after each update, so a copy an update left half way is rebuilt, and
//     the index's stat record (size, mtime, inode, mode, owner; ctime is
//     left out, as linking changes it) is checked for every path each time.
// A worker that is not root (commands run as its own uid, and could write
// the copy through a link) checks out in full, as before.

// treeCopyMarker names, in a copy's directory, the file holding the commit
// its tree and index hold.
const treeCopyMarker = "ralph-tree"

// treeCopy is one private copy: dir/tree, dir/index, dir/ralph-tree.
type treeCopy struct{ dir string }

func (t treeCopy) tree() string   { return filepath.Join(t.dir, "tree") }
func (t treeCopy) index() string  { return filepath.Join(t.dir, "index") }
func (t treeCopy) marker() string { return filepath.Join(t.dir, treeCopyMarker) }

// treeCopyFor is the copy serving the scratch dir (ok false: check out in
// full). Scratches of one campaign share it under its lock.
func (g *Git) treeCopyFor(dir string) (treeCopy, bool) {
	if os.Geteuid() != 0 || g.scratches == nil || g.noTreeCopy {
		return treeCopy{}, false
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return treeCopy{}, false
	}
	sum := sha256.Sum256([]byte(v.(*scratchState).cache.dir + "\x00" + filepath.Dir(dir)))
	return treeCopy{dir: filepath.Join(g.cacheRoot, "trees", hex.EncodeToString(sum[:12]))}, true
}

// checkoutScratch checks commit out detached in the scratch dir (fresh from
// ScratchFrom: nothing but .git in it), linked from the private copy where
// there is one, else written in full. The caller checked the tree's bounds.
func (g *Git) checkoutScratch(ctx context.Context, dir, commit string) error {
	if tc, ok := g.treeCopyFor(dir); ok {
		err := g.linkedCheckout(ctx, tc, dir, commit)
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

// linkedCheckout brings the copy to commit and links it into dir.
func (g *Git) linkedCheckout(ctx context.Context, tc treeCopy, dir, commit string) error {
	unlock, err := objectCache{dir: tc.dir}.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := g.updateCopy(ctx, tc, dir, commit); err != nil {
		return err
	}
	return g.linkCopy(ctx, tc, dir, commit)
}

// updateCopy makes the copy hold commit's tree, from the scratch's objects.
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
	if _, err := g.run(ctx, dir, cmdOpts{env: tc.env(dir)}, "-c", "core.trustctime=false",
		"read-tree", "--reset", "-u", commit); err != nil {
		return fmt.Errorf("bring the tree copy to %s: %w", shortID(commit), err)
	}
	if err := sealTree(tc.tree()); err != nil {
		return err
	}
	return os.WriteFile(tc.marker(), []byte(commit+"\n"), 0o400)
}

// env points the scratch's git at the copy's work tree and index.
func (tc treeCopy) env(dir string) []string {
	return []string{"GIT_DIR=" + filepath.Join(dir, ".git"), "GIT_WORK_TREE=" + tc.tree(), "GIT_INDEX_FILE=" + tc.index()}
}

// sealTree takes every write bit from the copy's files (git wrote the new
// ones with the worker's umask). ctime changes, which the copy's stat
// check leaves out.
func sealTree(root string) error {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&0o222 != 0 {
			return os.Chmod(path, perm&^0o222)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seal the tree copy: %w", err)
	}
	return nil
}

// linkCopy gives the scratch dir the copy's tree (exactly its index's
// entries: files by hard link, symlinks and submodule directories made
// anew), its index and a detached HEAD at commit.
func (g *Git) linkCopy(ctx context.Context, tc treeCopy, dir, commit string) error {
	out, err := g.run(ctx, dir, cmdOpts{env: tc.env(dir)}, "ls-files", "-s", "-z")
	if err != nil {
		return fmt.Errorf("list the tree copy: %w", err)
	}
	made := map[string]bool{".": true}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, name, ok := strings.Cut(rec, "\t")
		mode, _, _ := strings.Cut(meta, " ")
		if !ok || name == ".git" || strings.HasPrefix(name, ".git/") {
			return fmt.Errorf("the tree copy's index holds %q", rec)
		}
		rel := filepath.FromSlash(name)
		if parent := filepath.Dir(rel); !made[parent] {
			if err := os.MkdirAll(filepath.Join(dir, parent), 0o755); err != nil {
				return fmt.Errorf("link the tree copy: %w", err)
			}
			made[parent] = true
		}
		src, dst := filepath.Join(tc.tree(), rel), filepath.Join(dir, rel)
		switch mode {
		case "100644", "100755":
			err = os.Link(src, dst)
		case "120000":
			var target string
			if target, err = os.Readlink(src); err == nil {
				err = os.Symlink(target, dst)
			}
		case "160000":
			err = os.Mkdir(dst, 0o755)
		default:
			err = fmt.Errorf("mode %s", mode)
		}
		if err != nil {
			return fmt.Errorf("link %s from the tree copy: %w", name, err)
		}
	}
	index := filepath.Join(dir, ".git", "index")
	if err := errors.Join(copyFile(tc.index(), index), os.Chmod(index, 0o644)); err != nil {
		return fmt.Errorf("give the scratch the copy's index: %w", err)
	}
	return writeGitFile(dir, "HEAD", []byte(commit+"\n"))
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
