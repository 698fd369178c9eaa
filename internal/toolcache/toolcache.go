// Package toolcache keeps the worker's warm tool caches (Go build and
// module caches, npm, pip ...) per line: a campaign's integration branch,
// or the worker's plain runs. A command never writes a line's cache: it
// gets a private copy (Checkout), and only the worker adds what a copy
// wrote to the line (Copy.Commit), after the merge whose verify wrote it
// landed.
//
// A line is a stack of read-only layers (layers.go), each what one landed
// verify added. A root worker gives a verify an overlay (overlay_linux.go):
// the layers below, a private upper directory on top, so a copy costs a
// mount whatever the line holds, and committing it adds the upper
// directory as a layer. Otherwise (and for the model's long-lived copy) a
// copy is a hardlink farm when commands run as another uid than the worker
// (the line's files are the worker's and read-only, so a command can
// neither write nor chmod them through its links), or a full copy (cp
// --reflink=auto: a clone where the file system makes one). A layer whose
// marker is missing, unreadable or disagrees with its files makes the
// whole line removed and start empty: a damaged cache is rebuilt, never
// trusted.
package toolcache

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Dirs are the caches a copy holds, one directory each; Env points the
// tools at them.
var Dirs = []string{"go-build", "go-mod", "npm", "pip", "xdg"}

// marker is written last into a committed line: without it (or with one
// that does not match the files) the line is damaged.
const marker = ".ralph-toolcache"

// Stats is what a committed line holds, as its marker records it.
type Stats struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Store is one worker's tool caches under root (a directory commands
// cannot see).
type Store struct {
	root     string
	maxBytes int64
	// uid and gid own a copy's directories; farm: the copy is a hardlink
	// farm (commands run as uid, which is not the worker's).
	uid, gid int
	farm     bool
	// overlay: verifies' copies are overlays (a root worker that can
	// mount one); overlayWhy says why not otherwise.
	overlay    bool
	overlayWhy string

	mu sync.Mutex
	// verified holds the layers this worker has checked against their
	// markers: a layer never changes, so once is enough.
	verified map[string]bool
	// compacting holds the lines whose layers this worker is merging (one
	// merge per line at a time).
	compacting map[string]bool
}

// Owner is who a copy is for: the commands' uid and gid, and whether
// commands run as another user than the worker (then copies are farms).
type Owner struct {
	UID, GID int
	Other    bool
}

// New opens (creating it) the store at root; maxMB bounds every line
// (RALPH_TOOL_CACHE_MB).
func New(root string, maxMB int, owner Owner) (*Store, error) {
	if maxMB < 1 {
		return nil, fmt.Errorf("toolcache: RALPH_TOOL_CACHE_MB must be a positive integer, got %d", maxMB)
	}
	for _, d := range []string{root, filepath.Join(root, "lines"), filepath.Join(root, "work"), filepath.Join(root, "empty")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("toolcache: %w", err)
		}
	}
	s := &Store{root: root, maxBytes: int64(maxMB) << 20, uid: owner.UID, gid: owner.GID, farm: owner.Other,
		verified: map[string]bool{}, compacting: map[string]bool{}}
	s.sweep()
	s.overlayWhy = s.probeOverlay()
	s.overlay = s.overlayWhy == ""
	return s, nil
}

// Farm reports whether copies are hardlink farms.
func (s *Store) Farm() bool { return s.farm }

// Overlay says whether a verify's copy is an overlay of the line ("" when
// it is; otherwise why not: then it is a farm or a full copy).
func (s *Store) Overlay() string { return s.overlayWhy }

// Kind says what a verify's copy is on this worker, for its start line.
func (s *Store) Kind() string {
	switch {
	case s == nil:
		return "none"
	case s.overlay:
		return "overlays of the line's layers"
	case s.farm:
		return "hardlink farms (no overlay: " + s.overlayWhy + ")"
	default:
		return "full copies (no overlay: " + s.overlayWhy + ")"
	}
}

// MaxBytes is the bound of one line.
func (s *Store) MaxBytes() int64 { return s.maxBytes }

// staleCopy is the age past which a work copy is a killed worker's: no
// verify runs that long, and workers sharing a session directory must not
// remove each other's copies in use.
const staleCopy = 24 * time.Hour

// sweep removes the work copies a worker that ended left behind (an
// overlay's mount first: at once, its lock says its worker is gone; others
// a day old), and retired layers no overlay reads any more.
func (s *Store) sweep() {
	entries, _ := os.ReadDir(filepath.Join(s.root, "work"))
	for _, e := range entries {
		if line := retiredLine(e.Name()); line != "" {
			s.dropRetired(line) // a retired layer's age says nothing of its readers
			continue
		}
		if strings.HasPrefix(e.Name(), "trash-") { // no overlay reads it
			_ = RemoveAll(filepath.Join(s.root, "work", e.Name()))
			continue
		}
		dir := filepath.Join(s.root, "work", e.Name())
		if sweepCopy(dir) { // an overlay: gone as soon as its worker is
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleCopy {
			unmountUnder(dir)
			_ = RemoveAll(dir)
		}
	}
}

// CampaignLine names a campaign's integration line; PlainLine the worker's
// plain runs.
func CampaignLine(campaign string) string { return "campaign-" + flat(campaign) }

// PlainLine is the line of runs outside any campaign.
const PlainLine = "runs"

func flat(s string) string {
	return strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(s)
}

func (s *Store) lineDir(line string) (string, error) {
	if line == "" || line != flat(line) || strings.HasPrefix(line, ".") {
		return "", fmt.Errorf("toolcache: %q is not a line name", line)
	}
	return filepath.Join(s.root, "lines", line), nil
}

// lock holds the line's lock file until the returned func is called:
// checkouts and commits of one line (of any worker sharing the store) run
// one at a time.
func (s *Store) lock(line string) (func(), error) {
	f, err := s.flock(line+".lock", syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// flock opens the lock file name beside the lines and takes how on it.
func (s *Store) flock(name string, how int) (*os.File, error) {
	f, err := lockFile(filepath.Join(s.root, "lines", name), how|lockCreate)
	if err != nil {
		return nil, fmt.Errorf("toolcache: %w", err)
	}
	return f, nil
}

// lockCreate has lockFile create the file when it is missing.
const lockCreate = 1 << 30

// lockFile opens path and takes how on it (LOCK_SH, LOCK_EX, with
// LOCK_NB; and lockCreate).
func lockFile(path string, how int) (*os.File, error) {
	flags := os.O_RDWR
	if how&lockCreate != 0 {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how&^lockCreate); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", filepath.Base(path), err)
	}
	return f, nil
}

// Copy is one command's private copy of a line's cache at Dir.
type Copy struct {
	s    *Store
	line string
	// Dir holds one directory per entry of Dirs.
	Dir string
	// From is what the line held (zero for an empty line); Rebuilt says
	// why the line was found damaged and started empty ("" when it was not).
	From    Stats
	Rebuilt string
	// Took is how long the copy took.
	Took time.Duration
	// ov is the copy's overlay (nil for a farm or a full copy).
	ov *overlayCopy
}

// Checkout makes a private copy of line's cache. dest (which must not
// exist) is where it goes; "" puts it in the store's work directory, as an
// overlay where the store can mount one (it must then be removed or
// committed: it holds a mount).
func (s *Store) Checkout(line, dest string) (*Copy, error) {
	started := time.Now()
	dir, err := s.lineDir(line)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(line)
	if err != nil {
		return nil, err
	}
	defer unlock()
	c := &Copy{s: s, line: line, Dir: dest}
	layers, why := readLine(dir)
	if why == "" && dest == "" && s.overlay {
		if why = s.verifyLayers(layers); why == "" {
			if err := s.mountCopy(c, layers); err != nil {
				return nil, err
			}
			c.From, c.Took = total(layers), time.Since(started)
			return c, nil
		}
	}
	if c.Dir == "" {
		if c.Dir, err = s.workDir("copy"); err != nil {
			return nil, err
		}
	}
	if why == "" {
		c.From, why, err = s.fill(layers, c.Dir)
		if err != nil {
			return nil, err
		}
	}
	if why != "" {
		if err := RemoveAll(c.Dir); err != nil {
			return nil, fmt.Errorf("toolcache: remove a partial copy: %w", err)
		}
		s.retire(line, dir)
		c.From, c.Rebuilt = Stats{}, why
	}
	if err := s.ensureDirs(c.Dir); err != nil {
		_ = RemoveAll(c.Dir)
		return nil, err
	}
	c.Took = time.Since(started)
	return c, nil
}

// fill copies the line's layers into dest, the newest first (a file an
// older layer also holds is the newer one's). why says why the line is
// damaged (a layer disagrees with its marker).
func (s *Store) fill(layers []layer, dest string) (Stats, string, error) {
	if err := os.Mkdir(dest, 0o700); err != nil {
		return Stats{}, "", fmt.Errorf("toolcache: %w", err)
	}
	for i := len(layers) - 1; i >= 0; i-- {
		l := layers[i]
		got, err := s.copyTree(l.path, dest, s.farm)
		switch {
		case err != nil:
			return Stats{}, fmt.Sprintf("layer %s: copy: %v", filepath.Base(l.path), err), nil
		case got != l.st:
			return Stats{}, l.disagrees(got), nil
		}
	}
	return total(layers), "", nil
}

// ensureDirs gives dest one directory per cache, all the commands' uid's.
func (s *Store) ensureDirs(dest string) error {
	for _, d := range append([]string{""}, Dirs...) {
		p := filepath.Join(dest, d)
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("toolcache: %w", err)
		}
		if err := s.own(p); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) own(path string) error {
	if !s.farm {
		return nil
	}
	// Already the commands': no change (through an overlay, a chown
	// copies the directory up for nothing).
	if fi, err := os.Lstat(path); err == nil {
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) == s.uid && int(st.Gid) == s.gid {
			return nil
		}
	}
	if err := os.Lchown(path, s.uid, s.gid); err != nil {
		return fmt.Errorf("toolcache: give %s to uid %d: %w", path, s.uid, err)
	}
	return nil
}

func (s *Store) workDir(kind string) (string, error) {
	return filepath.Join(s.root, "work", kind+"-"+randomHex(8)), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Remove deletes the copy (a no-op once committed or removed).
func (c *Copy) Remove() error {
	if c == nil || c.Dir == "" {
		return nil
	}
	if c.ov != nil {
		err := c.ov.release(c.s, c.line)
		c.ov, c.Dir = nil, ""
		return err
	}
	err := RemoveAll(c.Dir)
	c.Dir = ""
	return err
}

// Commit adds what the copy wrote to the line's cache (its merge landed)
// and returns what the line then holds. Nothing of it that a command could
// still turn into a write of the line stays: links, special files and
// files with other names are dropped, the rest become the worker's and
// read-only. Over the bound, the oldest files go first.
//
// An overlay's upper directory becomes the line's newest layer. A farm or
// a full copy held the whole line: it becomes the line's only layer (what
// another copy committed since it was made is lost, as a cache may be).
func (c *Copy) Commit() (Stats, error) {
	s := c.s
	dir, err := s.lineDir(c.line)
	if err != nil {
		return Stats{}, err
	}
	stage, err := s.workDir("commit")
	if err != nil {
		return Stats{}, err
	}
	whole := c.ov == nil
	// The copy leaves the command's reach first: a rename within the
	// store's file system.
	from := c.Dir
	if !whole {
		if from, err = c.ov.detach(); err != nil {
			return Stats{}, err
		}
	}
	if err := os.Rename(from, stage); err != nil {
		return Stats{}, fmt.Errorf("toolcache: take the copy: %w", err)
	}
	if !whole {
		_ = c.ov.release(s, c.line)
		c.ov = nil
	}
	c.Dir = ""
	defer RemoveAll(stage) // a no-op once it is a layer
	st, err := s.seal(stage)
	if err != nil {
		return Stats{}, err
	}
	if st.Files == 0 && !whole { // the command wrote nothing: the line is as it was
		layers, _ := readLine(dir)
		return total(layers), nil
	}
	if whole && st.Bytes > s.maxBytes {
		if st, err = s.evict(stage, s.maxBytes*3/4); err != nil {
			return Stats{}, err
		}
	}
	if err := writeMarker(stage, st); err != nil {
		return Stats{}, err
	}
	unlock, err := s.lock(c.line)
	if err != nil {
		return Stats{}, err
	}
	layers, err := s.addLayer(c.line, dir, stage, st, whole)
	unlock()
	if err != nil {
		return Stats{}, err
	}
	got := total(layers)
	if s.crowded(layers) && s.startCompacting(c.line) {
		defer s.doneCompacting(c.line)
		if got, err = s.compact(c.line, dir, layers); err != nil {
			return Stats{}, err
		}
	}
	s.bound(c.line)
	return got, nil
}

// seal makes a used copy fit to be a layer: only directories and plain
// files with one name stay (a file the command linked from elsewhere would
// have the worker change that file; an overlay's whiteouts and its own
// attributes mean nothing in a layer); in a farm they become the worker's
// and lose every write bit. A cache's own bookkeeping beside its entries
// (Go's trim.txt, which it rewrites in place) stays the commands': a copy
// gets its own of it, never the layer's. It returns what stays.
func (s *Store) seal(root string) (Stats, error) {
	var st Stats
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dropOverlayAttrs(path)
		if path == root {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			// The commands' uid owns a layer's directories: through an
			// overlay it adds its entries there (to its upper directory).
			if err := s.own(path); err != nil {
				return err
			}
			return os.Chmod(path, 0o755)
		}
		sys := fi.Sys().(*syscall.Stat_t)
		// One of the line's own files: the worker's and read-only.
		linked := s.farm && int(sys.Uid) == os.Geteuid() && fi.Mode().Perm()&0o222 == 0
		rel, _ := filepath.Rel(root, path)
		// A marker is the worker's alone: one a command wrote would be
		// counted as a file, then overwritten, and the layer found damaged.
		if !fi.Mode().IsRegular() || (!linked && sys.Nlink > 1) || rel == marker {
			return os.Remove(path)
		}
		switch {
		case bookkeeping(rel):
			if err := s.own(path); err != nil {
				return err
			}
			if err := os.Chmod(path, 0o644); err != nil {
				return err
			}
		case s.farm && !linked:
			if err := os.Lchown(path, os.Geteuid(), os.Getegid()); err != nil {
				return err
			}
			if err := os.Chmod(path, fi.Mode().Perm()&^0o222); err != nil {
				return err
			}
		}
		st.Files++
		st.Bytes += fi.Size()
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("toolcache: seal the copy: %w", err)
	}
	return st, nil
}

// bookkeeping reports whether rel (in a copy) is a cache's own file beside
// its entries, such as Go's trim.txt.
func bookkeeping(rel string) bool { return slices.Contains(Dirs, filepath.Dir(rel)) }

// copyTree copies the layer at src into dest as a hardlink farm (link) or
// a full copy, leaving what dest already holds (a newer layer's). It
// counts every plain file of src.
func (s *Store) copyTree(src, dest string, link bool) (Stats, error) {
	var st Stats
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dest, rel)
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
			return nil
		case fi.IsDir():
			if err := os.Mkdir(to, 0o755); err != nil {
				if errors.Is(err, os.ErrExist) {
					return nil
				}
				return err
			}
			return s.own(to)
		case rel == marker:
			return nil
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a plain file", rel)
		}
		st.Files++
		st.Bytes += fi.Size()
		if exists(to) {
			return nil
		}
		// The cache's bookkeeping is copied for the command to write.
		if link && !bookkeeping(rel) {
			return os.Link(path, to)
		}
		if err := copyFile(path, to, fi.Mode().Perm()); err != nil {
			return err
		}
		return s.own(to)
	})
	return st, err
}

func copyFile(from, to string, perm os.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o200)
	if err != nil {
		return err
	}
	// io.Copy uses copy_file_range: a clone where the file system shares
	// extents (btrfs, xfs), a copy in the kernel elsewhere.
	if _, err := out.ReadFrom(in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func readMarker(dir string) (Stats, error) {
	b, err := os.ReadFile(filepath.Join(dir, marker))
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		return Stats{}, fmt.Errorf("unreadable marker: %w", err)
	}
	if st.Files < 0 || st.Bytes < 0 {
		return Stats{}, fmt.Errorf("marker %s is out of range", b)
	}
	return st, nil
}

func writeMarker(dir string, st Stats) error {
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, marker), b, 0o444); err != nil {
		return fmt.Errorf("toolcache: write the marker: %w", err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// RemoveAll removes path even where a tool left directories without write
// permission (Go's module cache is read-only by design).
func RemoveAll(path string) error {
	if err := os.RemoveAll(path); err == nil {
		return nil
	}
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(path)
}

// Env points the tools at the copy at dir: Go's build and module caches,
// npm's and pip's, and every tool that follows XDG_CACHE_HOME.
func Env(dir string) []string {
	return []string{
		"GOCACHE=" + filepath.Join(dir, "go-build"),
		"GOMODCACHE=" + filepath.Join(dir, "go-mod"),
		"npm_config_cache=" + filepath.Join(dir, "npm"),
		"PIP_CACHE_DIR=" + filepath.Join(dir, "pip"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "xdg"),
	}
}
