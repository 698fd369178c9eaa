package gitws

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The safety walks (checkGitTree over .git, nestedRepos over the work tree)
// run before every step that reads either, several times a round. Most
// directories are unchanged since the last walk, so a walk keeps, per
// directory, what it needs of the entries (the subdirectories; whether one
// is named .git) and reads a directory again only when its (device, inode,
// ctime) differ from those of the cached read. Every directory is still
// Lstat'ed on every walk, so a change at any depth is found:
//   - adding, removing, renaming or replacing an entry sets the directory's
//     ctime to the current time, and no unprivileged process can set a
//     ctime (utimensat sets only atime and mtime; changing the clock needs
//     CAP_SYS_TIME, which a user namespace does not grant);
//   - a directory replaced by another one, or renamed in from elsewhere,
//     has another inode, or (inode numbers are reused) a ctime no older
//     than its creation, which is after the cached read;
//   - a read is cached only when the directory's ctime is settled: older
//     than the read by more than the timestamp clock's granularity (the
//     kernel stamps with a clock that can lag by a tick, ~1-10 ms; a
//     filesystem may store whole seconds), so a change after the read
//     cannot carry the same ctime. Directories just written (by our own
//     git step, mostly) are read every time until they settle.
//
// Keys are absolute paths, so workspaces never share an entry; the cache is
// bounded in bytes and evicts arbitrary entries when full.

// Walk kinds: the same path is never both, but their listings differ.
const (
	walkGitDir    = iota // inside .git: a cached directory holds no link or special file
	walkWork             // the work tree: a cached directory's .git entry is recorded
	checkedConfig        // a .git/config file (not a directory) checkRepo found safe
)

// settleFine is how old a ctime with sub-millisecond digits must be to be
// cached; settleCoarse applies when the filesystem may keep only whole
// seconds (or two, as FAT does).
const (
	settleFine   = 100 * time.Millisecond
	settleCoarse = 3 * time.Second
)

// defaultDirCacheBytes bounds a worker's cache: about 100,000 directories.
const defaultDirCacheBytes = 16 << 20

// dirEntryCost approximates an entry's memory beyond its strings.
const dirEntryCost = 128

type dirKey struct {
	kind int
	path string
}

// listing is what a walk needs of one directory.
type listing struct {
	subdirs []string // names of the entries that are directories (".git" left out)
	hasGit  bool     // an entry named .git exists (any type)
}

type dirVerdict struct {
	dev, ino uint64
	ctime    syscall.Timespec
	cost     int
	listing
}

// dirCache is safe for concurrent walks (of different workspaces). A nil
// *dirCache caches nothing.
type dirCache struct {
	limit int
	now   func() time.Time
	fine  time.Duration // settleFine unless a test shortens it
	reads atomic.Int64  // directories read, for tests

	mu   sync.Mutex
	size int
	m    map[dirKey]*dirVerdict
}

func newDirCache(limit int) *dirCache {
	return &dirCache{limit: limit, now: time.Now, fine: settleFine, m: map[dirKey]*dirVerdict{}}
}

// notDirError: a path a walk expected to be a directory (its parent's
// entry said so) is not one.
type notDirError struct {
	path string
	mode fs.FileMode
}

func (e *notDirError) Error() string {
	return fmt.Sprintf("%s is not a directory (%s)", e.path, e.mode.Type())
}

// list returns dir's listing: from the cache when dir is unchanged, else
// read anew, with check vetting every entry first (a failed check is
// returned and nothing is cached). root follows a link at dir itself (the
// worker's own path); below the root nothing is followed and a non-directory
// is a *notDirError.
func (c *dirCache) list(kind int, dir string, root bool, check func(dir string, entries []fs.DirEntry) error) (listing, error) {
	stat := os.Lstat
	if root {
		stat = os.Stat
	}
	fi, err := stat(dir)
	if err != nil {
		return listing{}, err
	}
	if !fi.IsDir() {
		return listing{}, &notDirError{path: dir, mode: fi.Mode()}
	}
	key := dirKey{kind, dir}
	if l, ok := c.get(key, fi); ok {
		return l, nil
	}
	flags := os.O_RDONLY | syscall.O_DIRECTORY
	if !root {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(dir, flags, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
			if now, lerr := os.Lstat(dir); lerr == nil && !now.IsDir() {
				return listing{}, &notDirError{path: dir, mode: now.Mode()}
			}
		}
		return listing{}, err
	}
	defer f.Close()
	// The key is what was opened, taken before reading: a change during
	// the read leaves a later ctime, so the next walk reads again.
	opened, err := f.Stat()
	if err != nil {
		return listing{}, err
	}
	readAt := time.Time{}
	if c != nil {
		readAt = c.now()
		c.reads.Add(1)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return listing{}, err
	}
	if err := check(dir, entries); err != nil {
		return listing{}, err
	}
	var l listing
	for _, e := range entries {
		switch {
		case e.Name() == ".git":
			l.hasGit = true
		case e.IsDir():
			l.subdirs = append(l.subdirs, e.Name())
		}
	}
	c.put(key, opened, readAt, l)
	return l, nil
}

// clock is the time a read starts, for put (zero for a nil cache).
func (c *dirCache) clock() time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.now()
}

func statOf(fi fs.FileInfo) (*syscall.Stat_t, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

func (c *dirCache) get(key dirKey, fi fs.FileInfo) (listing, bool) {
	st, ok := statOf(fi)
	if c == nil || !ok {
		return listing{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if !ok {
		return listing{}, false
	}
	if v.dev != uint64(st.Dev) || v.ino != uint64(st.Ino) || v.ctime != st.Ctim {
		c.drop(key, v)
		return listing{}, false
	}
	return v.listing, true
}

// put caches l for the directory fi describes, read at readAt, when its
// ctime is settled and the entry fits.
func (c *dirCache) put(key dirKey, fi fs.FileInfo, readAt time.Time, l listing) {
	st, ok := statOf(fi)
	if c == nil || !ok {
		return
	}
	settle := c.fine
	if st.Ctim.Nsec%int64(time.Millisecond) == 0 {
		settle = settleCoarse
	}
	if !time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(readAt.Add(-settle)) {
		return
	}
	cost := dirEntryCost + len(key.path)
	for _, name := range l.subdirs {
		cost += len(name) + 16
	}
	if cost > c.limit/8 {
		return // one huge directory must not empty the cache
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.drop(key, old)
	}
	for c.size+cost > c.limit {
		for k, v := range c.m { // map order is random: a random victim
			c.drop(k, v)
			break
		}
	}
	c.m[key] = &dirVerdict{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: st.Ctim, cost: cost, listing: l}
	c.size += cost
}

func (c *dirCache) drop(key dirKey, v *dirVerdict) {
	delete(c.m, key)
	c.size -= v.cost
}
