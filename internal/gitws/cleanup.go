package gitws

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Lifetimes of what the worker keeps for campaign steps under its cache
// root (docs/git.md, "What is kept, and for how long"): each is a
// speed-up rebuilt from the remote when missing, so none is kept once
// nothing has used it for a while, and a pass at most every prunePass (on
// a step that opens a cache, under its lock) removes what has not.
const (
	// mirrorRefIdle: a cache's ref not fetched for this long (a task that
	// ended, a campaign that ended) is dropped, and the objects only it
	// reached go with the next repack.
	mirrorRefIdle = 24 * time.Hour
	// treeCopyIdle: a tree copy not lent for this long is removed (its
	// campaign ended, or its lanes are no longer verified at once).
	treeCopyIdle = 6 * time.Hour
	// cacheIdle: a cache no step opened for this long (a local-mode
	// campaign's repository that ended) is removed whole.
	cacheIdle = 72 * time.Hour
	// candidatePackIdle: a round's shared base pack (candidate.go) older
	// than this is of no round still running (its candidates link it as
	// they start), nor of a later one (each round writes its own).
	candidatePackIdle = 24 * time.Hour
	// prunePass: how often a cache is looked through.
	prunePass = time.Hour
)

// pruneStamp in a cache's directory: its mtime is the last pass.
const pruneStamp = "ralph-pruned"

// pruneCache drops, at most once a prunePass, the cache's refs nobody
// fetched for mirrorRefIdle (keeping those of this step, fresh) and the
// objects only they reached, then sweeps the worker's idle tree copies and
// caches. Called under the cache's lock.
func (g *Git) pruneCache(ctx context.Context, c objectCache) error {
	stamp := filepath.Join(c.dir, pruneStamp)
	if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < prunePass {
		return nil
	}
	if err := os.WriteFile(stamp, nil, 0o600); err != nil {
		return fmt.Errorf("stamp the git object cache's prune: %w", err)
	}
	old, err := idleRefs(c.dir, mirrorRefIdle)
	if err != nil {
		return err
	}
	if len(old) > 0 {
		var b strings.Builder
		for _, ref := range old {
			b.WriteString("delete " + ref + "\n")
		}
		if _, err := g.run(ctx, c.dir, cmdOpts{stdin: b.String()}, "update-ref", "--stdin"); err != nil {
			return fmt.Errorf("drop %d idle refs of the git object cache: %w", len(old), err)
		}
		// One pack of what the remaining refs reach: the dropped refs'
		// own objects are left out (a scratch linking an old pack keeps
		// its link).
		if _, err := g.run(ctx, c.dir, cmdOpts{}, "-c", "repack.writeBitmaps=false", "repack", "-a", "-d", "-q"); err != nil {
			return fmt.Errorf("repack the git object cache: %w", err)
		}
	}
	g.sweepIdle(treeCopyIdle, cacheIdle)
	return nil
}

// idleRefs lists the cache's refs (each a loose file: the cache never
// packs its refs) whose file was last written or fetched (touchRefs)
// longer than idle ago.
func idleRefs(dir string, idle time.Duration) ([]string, error) {
	var old []string
	root := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(cacheMirrorPrefix, "/")))
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if time.Since(fi.ModTime()) > idle {
			rel, _ := filepath.Rel(dir, path)
			old = append(old, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the git object cache's refs: %w", err)
	}
	return old, nil
}

// touchRefs marks the cache's refs a step fetched as used now (git leaves
// a ref that did not move untouched).
func touchRefs(dir string, refs []string) {
	now := time.Now()
	for _, ref := range refs {
		_ = os.Chtimes(filepath.Join(dir, filepath.FromSlash(ref)), now, now)
	}
}

// treeCopyName is a pool copy's directory name: its cache's and its slot.
var treeCopyName = regexp.MustCompile(`^[0-9a-f]{24}-[0-9]+$`)

// sweepIdle removes the tree copies not lent for copyIdle, unmarked (a
// killed worker's lend cut short) or of the older per-scratch layout, and
// the caches not opened for idleCache; at worker start (New) as on a pass.
// A copy or cache whose lock someone holds (another worker sharing the
// session directory, a step of this one) stays.
func (g *Git) sweepIdle(copyIdle, idleCache time.Duration) {
	trees := filepath.Join(g.cacheRoot, treesDirName)
	entries, _ := os.ReadDir(trees)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".lock")
		if name != e.Name() && pathExists(filepath.Join(trees, name)) {
			continue // the lock of a copy: with it
		}
		tc := treeCopy{dir: filepath.Join(trees, name)}
		fi, err := os.Stat(tc.marker())
		if err == nil && treeCopyName.MatchString(name) && time.Since(fi.ModTime()) < copyIdle {
			continue
		}
		removeLocked(tc.dir, true)
	}
	packs, _ := filepath.Glob(filepath.Join(g.cacheRoot, candidatesDirName, "*"))
	for _, dir := range packs {
		if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > candidatePackIdle {
			mu, _ := cacheLocks.LoadOrStore(dir, &sync.Mutex{}) // basePack's lock
			mu.(*sync.Mutex).Lock()
			_ = os.RemoveAll(dir)
			mu.(*sync.Mutex).Unlock()
		}
	}
	caches, _ := filepath.Glob(filepath.Join(g.cacheRoot, "*.git"))
	for _, dir := range caches {
		if fi, err := os.Stat(dir); err == nil && time.Since(fi.ModTime()) > idleCache {
			removeLocked(dir, false)
		}
	}
}

// removeLocked removes dir when no one holds its lock, and the lock file
// too when dropLock: only for a lock nobody waits on (tree copies are
// taken with tryLock). A cache's lock is waited on (lock): a waiter would
// get a lock on the removed file while a newcomer locks a new one, so it
// stays, an empty file per remote.
func removeLocked(dir string, dropLock bool) {
	unlock := objectCache{dir: dir}.tryLock()
	if unlock == nil {
		return
	}
	defer unlock()
	if err := os.RemoveAll(dir); err == nil && dropLock {
		_ = os.Remove(dir + ".lock")
	}
}

// DropRefs deletes, in the campaign's repository, each ref under one of
// prefixes (each ending in "/") for which spent holds: one listing, then
// one push when there is something to delete. It returns what it deleted.
// The queue's own bookkeeping (lane refs, held merges) goes this way once
// spent; task branches and candidate refs are never passed here.
func (g *Git) DropRefs(ctx context.Context, dir string, l Line, prefixes []string, spent func(ref string) bool) ([]string, error) {
	args := []string{"ls-remote", "--", l.URL}
	for _, p := range prefixes {
		if !strings.HasPrefix(p, CampaignRefPrefix) || !strings.HasSuffix(p, "/") {
			return nil, fmt.Errorf("drop refs: %q is not a prefix under %s", p, CampaignRefPrefix)
		}
		args = append(args, p+"*")
	}
	out, err := g.run(ctx, dir, cmdOpts{}, args...)
	if err != nil {
		return nil, fmt.Errorf("list the campaign's refs on %s: %w", RedactURL(l.URL), err)
	}
	var drop []string
	for _, line := range strings.Split(out, "\n") {
		_, ref, ok := strings.Cut(line, "\t")
		if ok && underAny(ref, prefixes) && spent(ref) {
			drop = append(drop, ref)
		}
	}
	if len(drop) == 0 {
		return nil, nil
	}
	push := []string{"push", "--porcelain", "--no-verify", "--", l.URL}
	for _, ref := range drop {
		push = append(push, ":"+ref)
	}
	if _, err := g.run(ctx, dir, cmdOpts{}, push...); err != nil {
		return nil, fmt.Errorf("delete %d spent refs on %s: %w", len(drop), RedactURL(l.URL), err)
	}
	return drop, nil
}

func underAny(ref string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}
