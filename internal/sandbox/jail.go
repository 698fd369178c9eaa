package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// freshHomes holds the HOMEs made for one verify or review command each;
// a workspace's flattened name never starts with a dot.
const freshHomes = ".fresh"

// closeInheritedOnExec marks every descriptor beyond 0-2 that this process
// holds close-on-exec: a descriptor the worker's parent left open (a
// secret, a socket) would otherwise reach every command it starts. Go
// opens its own descriptors close-on-exec, and a command's are passed
// explicitly.
func closeInheritedOnExec() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing the worker's descriptors: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			setCloseOnExec(fd)
		}
	}
	return nil
}

// reachable lets the commands' uid reach paths: bwrap runs as that uid and
// must look up the workspace, the private homes and the shared paths to
// mount them. A directory on the way that others cannot search gets the
// search bit only (not read: nothing in it can be listed); bubblewrap then
// hides the workspace root and the session directory from the command.
func (s *Sandbox) reachable(paths ...string) error {
	if !s.id.drop {
		return nil
	}
	for _, p := range paths {
		for dir := p; ; dir = filepath.Dir(dir) {
			fi, err := os.Stat(dir)
			if err != nil {
				return fmt.Errorf("sandbox: %s: %w", dir, err)
			}
			if fi.Mode().Perm()&0o001 == 0 {
				if err := os.Chmod(dir, fi.Mode().Perm()|0o001); err != nil {
					return fmt.Errorf("sandbox: letting uid %d reach %s: %w", s.id.uid, p, err)
				}
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return nil
}

// ownHome gives a private home to the commands' uid.
func (s *Sandbox) ownHome(home string) error {
	if !s.id.drop {
		return nil
	}
	if err := os.Lchown(home, s.id.uid, s.id.gid); err != nil {
		return fmt.Errorf("sandbox: giving the private home %s to uid %d: %w", home, s.id.uid, err)
	}
	return nil
}

// FreshHome makes a HOME no command has written, for one verify or review
// command or one agent CLI attempt: what the model planted in its
// persistent home (a Go env file, .gitconfig, .npmrc) cannot change what
// verification runs. remove deletes it. While the home is in use the worker
// holds a lock on home-<id>.lock beside it, so that a worker starting later
// removes the homes of one that was killed (sweepFreshHomes). A nil Sandbox
// returns "" (commands keep the worker's HOME).
func (s *Sandbox) FreshHome() (home string, remove func(), err error) {
	if s == nil {
		return "", func() {}, nil
	}
	parent := filepath.Join(s.homes, freshHomes)
	if err := os.MkdirAll(parent, 0o711); err != nil {
		return "", nil, fmt.Errorf("sandbox: creating %s: %w", parent, err)
	}
	lock, err := os.CreateTemp(parent, "home-*"+homeLockSuffix)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: creating a fresh home's lock: %w", err)
	}
	home = strings.TrimSuffix(lock.Name(), homeLockSuffix)
	remove = func() {
		_ = os.RemoveAll(home)
		_ = os.Remove(lock.Name())
		_ = lock.Close()
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		remove()
		return "", nil, fmt.Errorf("sandbox: locking a fresh home: %w", err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		remove()
		return "", nil, fmt.Errorf("sandbox: creating a fresh home: %w", err)
	}
	if err := s.ownHome(home); err != nil {
		remove()
		return "", nil, err
	}
	return home, remove, nil
}

// homeLockSuffix names a fresh home's lock file (the home without it).
const homeLockSuffix = ".lock"

// sweepFreshHomes removes the fresh homes under homes whose lock nobody
// holds: a killed worker's (the kernel dropped its lock), never one that a
// live worker sharing the directory is using.
func sweepFreshHomes(homes string) {
	locks, _ := filepath.Glob(filepath.Join(homes, freshHomes, "home-*"+homeLockSuffix))
	for _, path := range locks {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(strings.TrimSuffix(path, homeLockSuffix))
			_ = os.Remove(path)
		}
		f.Close()
	}
}

// Own makes the workspace at dir workable by the commands' uid: every entry
// it does not own (a clone made by the worker, files the worker's tools or
// git steps wrote) is given to it. Links are changed themselves, never what
// they point at, and a file with more than one name is left alone: its
// other name may be outside the workspace. The workspace directory itself
// (and a protected .git, read-only inside the sandbox) stays the worker's,
// so that git run as the worker (its steps, an operator) trusts the
// repository; the directory is opened to the uid's group instead, and git
// inside the sandbox is told to trust it (see Env).
func (s *Sandbox) Own(dir string) error {
	if s == nil || s.mode != ModeBwrap || !s.id.drop {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("sandbox: opening the workspace %s: %w", dir, err)
	}
	defer root.Close()
	fi, err := root.Stat(".")
	if err == nil {
		err = s.openToGroup(root, fi)
	}
	if err != nil {
		return fmt.Errorf("sandbox: giving %s to uid %d: %w", dir, s.id.uid, err)
	}
	w := ownWalk{s: s, root: root, dir: dir, start: time.Now(), seen: map[string]ownedDir{}}
	if err := w.walk("."); err != nil {
		return err
	}
	s.owned.remember(w.seen, w.start)
	return nil
}

// ownWalk is one walk of Own: what it found of each directory.
type ownWalk struct {
	s     *Sandbox
	root  *os.Root
	dir   string
	start time.Time
	seen  map[string]ownedDir
}

// walk gives directory rel's entries to the commands' uid and walks its
// subdirectories; a directory unchanged since a walk found it owned is
// not read again (see ownedDirs).
func (w *ownWalk) walk(rel string) error {
	fi, err := w.root.Lstat(rel)
	if err != nil || !fi.IsDir() {
		return nil // gone or replaced since it was listed: the next walk sees it
	}
	st, stamped := stampOf(fi)
	abs := filepath.Join(w.dir, rel)
	d, cached := w.s.owned.get(abs, st)
	if !stamped || !cached {
		if d.subdirs, err = w.ownEntries(rel); err != nil {
			return err
		}
	}
	if stamped {
		w.seen[abs] = ownedDir{stamp: st, subdirs: d.subdirs}
	}
	for _, sub := range d.subdirs {
		if err := w.walk(path.Join(rel, sub)); err != nil {
			return err
		}
	}
	return nil
}

// ownEntries gives every entry of directory rel that the uid does not own
// to it (links themselves; a file with more than one name is left alone)
// and returns the names of its subdirectories.
func (w *ownWalk) ownEntries(rel string) ([]string, error) {
	f, err := w.root.Open(rel)
	if err != nil {
		return nil, nil // gone since it was listed
	}
	entries, err := f.ReadDir(-1) // in a Root, every entry comes Lstat'ed
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: giving %s to uid %d: %w", filepath.Join(w.dir, rel), w.s.id.uid, err)
	}
	var subdirs []string
	for _, e := range entries {
		name := path.Join(rel, e.Name())
		if e.IsDir() && !(name == ".git" && w.s.protectGit) {
			subdirs = append(subdirs, e.Name())
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		uid, gid, links := owner(fi)
		if (uid == w.s.id.uid && gid == w.s.id.gid) || (fi.Mode().IsRegular() && links > 1) || name == ".git" && w.s.protectGit {
			continue
		}
		if err := w.root.Lchown(name, w.s.id.uid, w.s.id.gid); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("sandbox: giving %s to uid %d: %w", filepath.Join(w.dir, name), w.s.id.uid, err)
		}
	}
	return subdirs, nil
}

// openToGroup gives the workspace directory to the uid's group with group
// read, write and search, keeping its owner.
func (s *Sandbox) openToGroup(root *os.Root, fi fs.FileInfo) error {
	if _, gid, _ := owner(fi); gid != s.id.gid {
		if err := root.Lchown(".", -1, s.id.gid); err != nil {
			return fmt.Errorf("sandbox: opening the workspace to gid %d: %w", s.id.gid, err)
		}
	}
	if perm := fi.Mode().Perm(); perm&0o070 != 0o070 {
		if err := root.Chmod(".", perm|0o070); err != nil {
			return fmt.Errorf("sandbox: opening the workspace to gid %d: %w", s.id.gid, err)
		}
	}
	return nil
}

// trustEnv tells git inside the sandbox to trust the workspace it is in,
// which the worker owns (git's "dubious ownership" check). Configuration
// from the environment counts as git's command line, which the check honours.
func (s *Sandbox) trustEnv() []string {
	if s.mode != ModeBwrap || !s.id.drop {
		return nil
	}
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*"}
}
