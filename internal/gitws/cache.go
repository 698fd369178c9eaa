package gitws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The worker's object cache (SPEC 41, "the queue's own cost"): a campaign
// step's scratch repository used to be a fresh clone of everything, every
// time. Now each remote has one bare repository per worker under its
// session directory (no sandbox ever sees it), brought up to date by an
// incremental fetch of the refs a step reads, and a step's scratch starts
// as a fresh repository of its own whose object store holds the cache's
// packs by hard link (a copy across filesystems or for a worker that is
// not root: see linkObjects). So:
//   - the cache holds only what git fetched from the step's own sources
//     (the remote's pushed branches; in local mode the campaign's
//     repository and its tasks' workspaces): the worker's merges are
//     written in the scratch, never in the cache, and reach it only
//     after they were pushed;
//   - a scratch's .git is a real directory like a clone's, and nothing in
//     it names the cache: a verify command sees the objects a clone of
//     those refs would hold;
//   - damage (a lock left behind, a pack without its index, an object git
//     cannot read) marks the cache, which is then rebuilt from nothing.

// cacheDirName is the caches' directory beside the hooks directory.
const cacheDirName = "git-cache"

// damagedMarker in a cache's directory says a step found it damaged.
const damagedMarker = "ralph-damaged"

// cacheMirrorPrefix holds, in a cache, the refs fetched from each source.
const cacheMirrorPrefix = "refs/ralph/mirror/"

// ScratchRef is one ref a scratch repository starts with: Ref of Repo,
// kept in the scratch as Into.
type ScratchRef struct {
	Repo, Ref, Into string
}

// objectCache is the bare repository caching one remote's objects.
type objectCache struct {
	dir string
}

// cacheFor is the cache of url (a remote, or a local-mode campaign's
// repository).
func (g *Git) cacheFor(url string) objectCache {
	sum := sha256.Sum256([]byte(url))
	return objectCache{dir: filepath.Join(g.cacheRoot, hex.EncodeToString(sum[:12])+".git")}
}

// mirrorRef is where the cache keeps ref of repo.
func mirrorRef(repo, ref string) string {
	sum := sha256.Sum256([]byte(repo))
	return cacheMirrorPrefix + hex.EncodeToString(sum[:8]) + "/" + strings.TrimPrefix(ref, "refs/")
}

// cacheLocks serialises the steps of one worker on each cache; the flock
// on the cache's lock file serialises workers sharing a session directory.
var cacheLocks sync.Map // dir → *sync.Mutex

// lock holds the cache until the returned func is called.
func (c objectCache) lock() (func(), error) {
	mu, _ := cacheLocks.LoadOrStore(c.dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	if err := os.MkdirAll(filepath.Dir(c.dir), 0o700); err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("create the git object cache: %w", err)
	}
	f, err := os.OpenFile(c.dir+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		mu.(*sync.Mutex).Unlock()
		return nil, fmt.Errorf("lock the git object cache %s: %w", c.dir, err)
	}
	return func() { f.Close(); mu.(*sync.Mutex).Unlock() }, nil
}

// tryLock holds the directory's lock when no one (this worker or another)
// holds it, until the returned func is called; nil when someone does.
func (c objectCache) tryLock() func() {
	mu, _ := cacheLocks.LoadOrStore(c.dir, &sync.Mutex{})
	if !mu.(*sync.Mutex).TryLock() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.dir), 0o700); err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil
	}
	f, err := os.OpenFile(c.dir+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil && !stillNamed(f, c.dir+".lock") {
			// A sweep removed the lock file between the open and the lock:
			// a newcomer may hold the new one.
			err = errors.New("the lock file was removed")
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		mu.(*sync.Mutex).Unlock()
		return nil
	}
	return func() { f.Close(); mu.(*sync.Mutex).Unlock() }
}

// stillNamed: path still names the open file f.
func stillNamed(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// damage says why the cache cannot be trusted ("" when nothing was found):
// it is looked at under the lock, so a lock file of git's is a leftover of
// a killed command, not one at work.
func (c objectCache) damage() string {
	if _, err := os.Lstat(filepath.Join(c.dir, damagedMarker)); err == nil {
		return "a step found an object missing or unreadable"
	}
	var why string
	_ = filepath.WalkDir(c.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || why != "" {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(c.dir, path)
		switch {
		case d.IsDir() && (rel == "objects" || strings.HasPrefix(rel, "objects"+string(filepath.Separator))) && rel != filepath.Join("objects", "pack"):
			if rel != "objects" {
				return filepath.SkipDir // loose objects: none are kept (transfer.unpackLimit=1)
			}
		case strings.HasSuffix(rel, ".lock"):
			why = rel + " was left behind"
		case strings.HasSuffix(rel, ".pack") && !pathExists(strings.TrimSuffix(path, ".pack")+".idx"):
			why = rel + " has no index"
		case strings.HasPrefix(filepath.Base(rel), "tmp_"):
			why = rel + " was left behind"
		}
		return nil
	})
	return why
}

func pathExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// markDamaged records that a step found the cache damaged: the next step
// to open it rebuilds it.
func (c objectCache) markDamaged() {
	if f, err := os.OpenFile(filepath.Join(c.dir, damagedMarker), os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600); err == nil {
		f.Close()
	}
}

// open makes sure the cache is a repository fit to use, rebuilding it
// empty when missing or damaged. Called under the lock.
func (g *Git) openCache(ctx context.Context, c objectCache) error {
	if pathExists(filepath.Join(c.dir, "HEAD")) && c.damage() == "" {
		return nil
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove the damaged git object cache %s: %w", c.dir, err)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("create the git object cache: %w", err)
	}
	if _, err := g.run(ctx, c.dir, cmdOpts{}, "init", "-q", "--bare", "--template=", "."); err != nil {
		return fmt.Errorf("initialise the git object cache: %w", err)
	}
	return nil
}

// cacheFetch brings refs into the cache: one fetch per source repository
// (again without the refs it lacks, when it lacks some). It returns each
// ref's commit (absent: the source has no such ref).
func (g *Git) cacheFetch(ctx context.Context, c objectCache, refs []ScratchRef) (map[ScratchRef]string, error) {
	byRepo := map[string][]ScratchRef{}
	var repos []string
	for _, r := range refs {
		if _, ok := byRepo[r.Repo]; !ok {
			repos = append(repos, r.Repo)
		}
		byRepo[r.Repo] = append(byRepo[r.Repo], r)
	}
	found := map[ScratchRef]string{}
	for _, repo := range repos {
		got, err := g.fetchInto(ctx, c, repo, byRepo[repo])
		if err != nil {
			return nil, err
		}
		for _, r := range got {
			commit, err := g.cacheRef(ctx, c, mirrorRef(repo, r.Ref))
			if err != nil {
				return nil, fmt.Errorf("read %s of %s in the git object cache: %w", r.Ref, RedactURL(repo), err)
			}
			found[r] = commit
		}
	}
	return found, nil
}

// fetchInto fetches wanted refs of repo into the cache and returns those
// repo has. Its packs are not synced to disk (core.fsync=none, as for the
// cache's repack): the cache is a copy of pushed objects, and a pack a
// crash cut short fails the git reading it, which marks the cache damaged
// and has it rebuilt. Each ref it lacks fails the fetch by name; it is dropped and
// the fetch tried again (a new task's branch, before its first go).
func (g *Git) fetchInto(ctx context.Context, c objectCache, repo string, wanted []ScratchRef) ([]ScratchRef, error) {
	for len(wanted) > 0 {
		args := []string{"-c", "transfer.unpackLimit=1", "-c", "fetch.unpackLimit=1", "-c", "core.fsync=none", "fetch", "-q", "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
			// Whether a mirror ref was forced is never read, and finding out
			// walks each moved ref's history.
			"--no-show-forced-updates", "--", repo}
		for _, r := range wanted {
			args = append(args, "+"+r.Ref+":"+mirrorRef(repo, r.Ref))
		}
		_, err := g.run(ctx, c.dir, cmdOpts{}, args...)
		if err == nil {
			return wanted, nil
		}
		var ge *gitError
		missing := -1
		if errors.As(err, &ge) {
			for i, r := range wanted {
				if strings.Contains(ge.output+"\n", "couldn't find remote ref "+r.Ref+"\n") {
					missing = i
				}
			}
		}
		if missing < 0 {
			return nil, fmt.Errorf("fetch %s into the git object cache: %w", RedactURL(repo), err)
		}
		wanted = append(wanted[:missing:missing], wanted[missing+1:]...)
	}
	return nil, nil
}

// cacheRef reads ref of the cache: the loose ref file fetch just wrote,
// else git's answer.
func (g *Git) cacheRef(ctx context.Context, c objectCache, ref string) (string, error) {
	if data, err := os.ReadFile(filepath.Join(c.dir, filepath.FromSlash(ref))); err == nil {
		if id := strings.TrimSpace(string(data)); isObjectID(id) {
			return id, nil
		}
	}
	commit, err := g.resolve(ctx, c.dir, ref)
	if err == nil && commit == "" {
		err = errors.New("not found after the fetch")
	}
	return commit, err
}

func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// ScratchFrom makes dir a fresh repository of the worker's (whatever an
// earlier step's verify command left there never reaches a later one)
// holding the objects of the cache of url, brought up to date with refs,
// each found ref set as its Into. The heads found are remembered for
// fetch, so the step's own fetches of those refs cost no git command.
func (g *Git) ScratchFrom(ctx context.Context, dir, url string, refs []ScratchRef) error {
	g.ForgetScratch(dir) // a tree copy still lent to dir comes back first
	if err := g.Scratch(ctx, dir); err != nil {
		return err
	}
	c := g.cacheFor(url)
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	found, err := g.syncCache(ctx, c, refs)
	if err != nil {
		return err
	}
	if err := linkObjects(filepath.Join(c.dir, "objects", "pack"), filepath.Join(dir, ".git", "objects", "pack")); err != nil {
		return err
	}
	if err := writePackedRefs(dir, refs, found); err != nil {
		return err
	}
	g.remember(dir, c, refs, found)
	return nil
}

// syncCache opens the cache and fetches refs into it; a cache whose fetch
// fails on its own objects is rebuilt once and fetched again.
func (g *Git) syncCache(ctx context.Context, c objectCache, refs []ScratchRef) (map[ScratchRef]string, error) {
	if err := g.openCache(ctx, c); err != nil {
		return nil, err
	}
	found, err := g.cacheFetch(ctx, c, refs)
	if err == nil {
		g.markUsed(c, found)
		if err := g.pruneCache(ctx, c); err != nil {
			return nil, err
		}
		return found, g.compactCache(ctx, c)
	}
	if !objectDamage(err) {
		return nil, err
	}
	c.markDamaged()
	if err := g.openCache(ctx, c); err != nil {
		return nil, err
	}
	return g.cacheFetch(ctx, c, refs)
}

// markUsed stamps the cache and the refs this step fetched as used now:
// what pruneCache and sweepIdle keep.
func (g *Git) markUsed(c objectCache, found map[ScratchRef]string) {
	now := time.Now()
	_ = os.Chtimes(c.dir, now, now)
	refs := make([]string, 0, len(found))
	for r := range found {
		refs = append(refs, mirrorRef(r.Repo, r.Ref))
	}
	touchRefs(c.dir, refs)
}

// maxCachePacks is how many packs a cache gathers (each fetch keeps its
// own) before they are repacked: every object lookup reads each pack's
// index, so a step's git slows with their number.
const maxCachePacks = 8

// compactCache repacks the cache's packs geometrically (each pack at least
// twice the size of the ones merged into it: the small recent ones are
// merged often, the large old one rarely) once they pass maxCachePacks.
// Scratches holding links to removed packs keep their own links. No one
// fetches from a cache over a dumb transport: -n skips update-server-info.
func (g *Git) compactCache(ctx context.Context, c objectCache) error {
	packs, _ := filepath.Glob(filepath.Join(c.dir, "objects", "pack", "*.pack"))
	if len(packs) <= maxCachePacks {
		return nil
	}
	if _, err := g.run(ctx, c.dir, cmdOpts{}, "-c", "repack.writeBitmaps=false", "-c", "core.fsync=none", "repack", "-d", "-q", "-n", "--geometric=2"); err != nil {
		return fmt.Errorf("repack the git object cache: %w", err)
	}
	return nil
}

// linkObjects gives the scratch's object store every pack of the cache's:
// by hard link (nothing copied) when the worker is root, as commands then
// run as another uid, which the sandbox leaves every multiply linked file
// away from (root's, read-only: a command cannot write the cache through
// its link); by copy when the worker is not root (a command runs as the
// worker's uid and could write a shared inode) or the cache is on another
// filesystem.
func linkObjects(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the git object cache: %w", err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return fmt.Errorf("create the scratch's object store: %w", err)
	}
	// The index last: git reads a pack only once its index is there.
	sort.SliceStable(entries, func(i, j int) bool {
		return !strings.HasSuffix(entries[i].Name(), ".idx") && strings.HasSuffix(entries[j].Name(), ".idx")
	})
	link := os.Geteuid() == 0
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".pack") || strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, ".rev")) {
			continue
		}
		src, dst := filepath.Join(from, name), filepath.Join(to, name)
		if link {
			if err := os.Link(src, dst); err == nil {
				continue
			} else if !errors.Is(err, syscall.EXDEV) {
				return fmt.Errorf("link %s into the scratch: %w", name, err)
			}
			link = false
		}
		if err := copyFile(src, dst); err != nil {
			return fmt.Errorf("copy %s into the scratch: %w", name, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// writePackedRefs sets each found ref's Into in the fresh scratch dir, as
// one packed-refs file (no git command: the repository is the worker's and
// was made a moment ago).
func writePackedRefs(dir string, refs []ScratchRef, found map[ScratchRef]string) error {
	lines := map[string]string{}
	for _, r := range refs {
		if commit := found[r]; commit != "" {
			lines[r.Into] = commit
		}
	}
	names := make([]string, 0, len(lines))
	for name := range lines {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	for _, name := range names {
		b.WriteString(lines[name] + " " + name + "\n")
	}
	if err := writeGitFile(dir, "packed-refs", []byte(b.String())); err != nil {
		return fmt.Errorf("set the scratch's refs: %w", err)
	}
	return nil
}

// scratchState is what ScratchFrom found for one scratch: its cache and the
// commits of the refs it set ("" for a ref the source lacked).
type scratchState struct {
	cache objectCache
	mu    sync.Mutex
	heads map[string]string // scratchKey → commit
	// lent is the tree copy checked out in the scratch (treecopy.go).
	lent *lent
	// stats are diff stats computed beside the tip's checkout (stat.go).
	stats map[string]*statFuture
}

func scratchKey(repo, ref, into string) string { return repo + "\x00" + ref + "\x00" + into }

func (g *Git) remember(dir string, c objectCache, refs []ScratchRef, found map[ScratchRef]string) {
	if g.scratches == nil {
		return
	}
	st := &scratchState{cache: c, heads: map[string]string{}}
	for _, r := range refs {
		st.heads[scratchKey(r.Repo, r.Ref, r.Into)] = found[r]
	}
	g.scratches.Store(dir, st)
}

// prefetched is the commit ScratchFrom set ref of repo to as into in dir.
// A ref found missing answers once: a step that creates it (Integration)
// asks the source again.
func (g *Git) prefetched(dir, repo, ref, into string) (string, bool) {
	return g.lookPrefetched(dir, repo, ref, into, true)
}

// peekPrefetched is prefetched without its answering a missing ref once.
func (g *Git) peekPrefetched(dir, repo, ref, into string) (string, bool) {
	return g.lookPrefetched(dir, repo, ref, into, false)
}

func (g *Git) lookPrefetched(dir, repo, ref, into string, once bool) (string, bool) {
	if g.scratches == nil {
		return "", false
	}
	v, ok := g.scratches.Load(dir)
	if !ok {
		return "", false
	}
	st := v.(*scratchState)
	st.mu.Lock()
	defer st.mu.Unlock()
	key := scratchKey(repo, ref, into)
	commit, ok := st.heads[key]
	if once && ok && commit == "" {
		delete(st.heads, key)
	}
	return commit, ok
}

// ForgetScratch drops what ScratchFrom remembered of dir (its step ended).
// A tree copy lent to the scratch is given back first (checked and
// marked), so call it before the scratch is removed.
func (g *Git) ForgetScratch(dir string) {
	if g.scratches == nil {
		return
	}
	if v, ok := g.scratches.LoadAndDelete(dir); ok {
		st := v.(*scratchState)
		st.mu.Lock()
		l := st.lent
		st.lent = nil
		stats := st.stats
		st.stats = nil
		st.mu.Unlock()
		for _, f := range stats {
			<-f.done // no git of the step outlives it
		}
		if l != nil {
			l.giveBack()
		}
	}
}

// noteDamage marks the cache of the scratch dir damaged when err says an
// object git needed is missing or unreadable: the cache is rebuilt by the
// next step, and err stays the worker's (never the task's fault).
func (g *Git) noteDamage(dir string, err error) {
	if g.scratches == nil || !objectDamage(err) {
		return
	}
	if v, ok := g.scratches.Load(dir); ok {
		v.(*scratchState).cache.markDamaged()
	}
}

// objectDamage says err is git failing on an object it cannot find or read.
func objectDamage(err error) bool {
	var ge *gitError
	if !errors.As(err, &ge) {
		return false
	}
	out := strings.ToLower(ge.output)
	for _, s := range []string{"missing blob", "missing tree", "missing commit", "bad object", "unable to read", "not a valid object",
		"corrupt", "invalid object", "packfile", "did not send all necessary objects", "bad tree object", "could not read",
		"loose object"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
