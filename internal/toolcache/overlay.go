package toolcache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// An overlay copy is a verify's view of a line at no cost but a mount: the
// line's layers below (read-only whatever the command's uid: the kernel
// writes only the upper directory), a private upper directory on top. The
// worker mounts it in its own mount namespace, where bubblewrap binds it
// like any copy; while it is mounted it holds the line's readers lock
// shared, so no layer under it goes.
type overlayCopy struct {
	root    string   // holds upper, work (the kernel's), merged (the mount) and alive
	readers *os.File // the line's readers lock, shared
	alive   *os.File // root/alive, locked while this worker holds the copy
	mounted bool
}

// aliveFile is the lock a copy's worker holds on it: a worker that finds
// it free (sweep) knows the copy's worker is gone.
const aliveFile = "alive"

// mountCopy makes c an overlay of layers (the oldest first).
func (s *Store) mountCopy(c *Copy, layers []layer) error {
	root, _ := s.workDir("copy")
	ov := &overlayCopy{root: root}
	upper, work, merged := filepath.Join(root, "upper"), filepath.Join(root, "work"), filepath.Join(root, "merged")
	// The commands' uid must reach merged (bubblewrap binds it as that
	// uid), never the kernel's work directory.
	if err := os.Mkdir(root, 0o711); err != nil {
		return fmt.Errorf("toolcache: %w", err)
	}
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o700); err != nil {
			_ = RemoveAll(root)
			return fmt.Errorf("toolcache: %w", err)
		}
	}
	// The mount's root is the upper directory's.
	if err := os.Chmod(upper, 0o755); err != nil {
		_ = RemoveAll(root)
		return fmt.Errorf("toolcache: %w", err)
	}
	if err := s.own(upper); err != nil {
		_ = RemoveAll(root)
		return err
	}
	alive, err := lockFile(filepath.Join(root, aliveFile), syscall.LOCK_EX|lockCreate)
	if err != nil {
		_ = RemoveAll(root)
		return err
	}
	ov.alive = alive
	f, err := s.flock(readers(c.line), syscall.LOCK_SH)
	if err != nil {
		_ = ov.release(s, c.line)
		return err
	}
	ov.readers = f
	lower := make([]string, 0, len(layers)+1)
	for i := len(layers) - 1; i >= 0; i-- {
		lower = append(lower, layers[i].path)
	}
	if len(lower) == 0 { // an empty line: an overlay needs a layer below
		lower = append(lower, filepath.Join(s.root, "empty"))
	}
	if err := mountOverlay(merged, lower, upper, work); err != nil {
		_ = ov.release(s, c.line)
		return fmt.Errorf("toolcache: mount the overlay of %s: %w", c.line, err)
	}
	ov.mounted = true
	c.Dir, c.ov = merged, ov
	if err := s.ensureDirs(merged); err != nil {
		_ = ov.release(s, c.line)
		c.Dir, c.ov = "", nil
		return err
	}
	return nil
}

// detach unmounts the overlay and returns its upper directory: what the
// command wrote.
func (ov *overlayCopy) detach() (string, error) {
	if ov.mounted {
		if err := unmount(filepath.Join(ov.root, "merged")); err != nil {
			return "", fmt.Errorf("toolcache: unmount the overlay: %w", err)
		}
		ov.mounted = false
	}
	return filepath.Join(ov.root, "upper"), nil
}

// release unmounts and removes the overlay, then lets the line's retired
// layers go if it was their last reader.
func (ov *overlayCopy) release(s *Store, line string) error {
	_, err := ov.detach()
	if err == nil {
		err = RemoveAll(ov.root)
	}
	for _, f := range []**os.File{&ov.readers, &ov.alive} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
	s.dropRetired(line)
	return err
}

// Unmount takes a copy's overlay away once its command has ended: what the
// command wrote stays (for Commit), the layers under it too, but no mount
// outlives the command (a worker stopped while a lane's copy waits for its
// landing leaves none). A no-op for other copies.
func (c *Copy) Unmount() error {
	if c == nil || c.ov == nil {
		return nil
	}
	_, err := c.ov.detach()
	return err
}

// sweepCopy removes the overlay copy at dir (in the work directory) when
// its worker is gone; it reports whether dir is an overlay copy.
func sweepCopy(dir string) bool {
	f, err := lockFile(filepath.Join(dir, aliveFile), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err == nil {
		unmountUnder(dir)
		_ = RemoveAll(dir)
		f.Close()
	}
	return true
}

// Unmount detaches every mount at or under dir: a test's cleanup, after
// it killed a worker in the middle of a verify.
func Unmount(dir string) { unmountUnder(dir) }

// overlayOption reports whether path can stand in an overlay's mount
// options (a comma or a colon there would split it).
func overlayOption(path string) bool { return !strings.ContainsAny(path, ",:\\") }
