package toolcache

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

func mountOverlay(at string, lower []string, upper, work string) error {
	// No index, no metacopy, no redirects: a file the command changes is
	// copied up whole, so the upper directory alone is what it wrote.
	opts := "lowerdir=" + strings.Join(lower, ":") + ",upperdir=" + upper + ",workdir=" + work +
		",index=off,metacopy=off,redirect_dir=off"
	if len(opts) >= os.Getpagesize() {
		return errors.New("too many layers for one mount's options")
	}
	return unix.Mount("overlay", at, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// unmount takes the mount at path away; one still busy (a process the
// command left is being killed) is detached and goes when it is idle.
func unmount(path string) error {
	err := unix.Unmount(path, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	return err
}

// probeOverlay says why this worker cannot mount overlays ("" when it
// can): it must be root and the store's path fit a mount's options.
func (s *Store) probeOverlay() string {
	if os.Geteuid() != 0 {
		return "the worker is not root"
	}
	if !overlayOption(s.root) {
		return "the store's path " + s.root + " holds a comma, a colon or a backslash"
	}
	dir, _ := s.workDir("probe")
	defer RemoveAll(dir)
	paths := []string{dir, filepath.Join(dir, "l"), filepath.Join(dir, "u"), filepath.Join(dir, "w"), filepath.Join(dir, "m")}
	for _, p := range paths {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err.Error()
		}
	}
	if err := mountOverlay(paths[4], paths[1:2], paths[2], paths[3]); err != nil {
		return "mount an overlay: " + err.Error()
	}
	if err := unmount(paths[4]); err != nil {
		return "unmount an overlay: " + err.Error()
	}
	return ""
}

// unmountUnder detaches every mount at or under dir (a killed worker's
// overlays).
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		at := unescapeMountPath(f[4])
		if at == dir || strings.HasPrefix(at, dir+"/") {
			_ = unix.Unmount(at, unix.MNT_DETACH)
		}
	}
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			n := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				n = n*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dropOverlayAttrs removes the overlay's own attributes from a file of an
// upper directory: in a layer, an opaque or a redirect mark would hide or
// move what the layers under it hold.
func dropOverlayAttrs(path string) {
	buf := make([]byte, 1024)
	n, err := unix.Llistxattr(path, buf)
	if err != nil || n == 0 {
		return
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if strings.HasPrefix(name, "trusted.overlay.") || strings.HasPrefix(name, "user.overlay.") {
			_ = unix.Lremovexattr(path, name)
		}
	}
}
