//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/ralph-temporal/ralph/agent"
)

// The CLI's home is the sandbox's to write: between two attempts the model
// may have put a link to any host path, or anything else, where the worker
// writes the CLI's configuration. So the worker reaches every entry there
// from the home's descriptor (opened when the worker made the home), one
// component at a time with O_NOFOLLOW; it writes a file as a new inode,
// never into an existing one (a hard link shares it), refuses anything but
// a plain directory or regular file where it expects one, and changes
// ownership on the opened descriptor, never by path.

// openHome opens the home the worker just made (its parent is the worker's:
// nothing of the sandbox's lies on the path yet).
func openHome(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("agent home: opening %s: %w", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// configDir opens the directory name (one component) of the home, made
// when missing and then owned by the CLI's uid.
func (a Attempt) configDir(name string) (*os.File, error) {
	err := unix.Mkdirat(int(a.home.Fd()), name, 0o700)
	made := err == nil
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("agent home: making %s: %w", name, err)
	}
	fd, err := unix.Openat(int(a.home.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return nil, planted(name, "a plain directory")
	}
	if err != nil {
		return nil, fmt.Errorf("agent home: opening %s: %w", name, err)
	}
	d := os.NewFile(uintptr(fd), filepath.Join(a.Home, name))
	if made {
		if err := d.Chown(a.uid, a.gid); err != nil {
			d.Close()
			return nil, fmt.Errorf("agent home: %w", err)
		}
	}
	return d, nil
}

// writeConfig makes name in dir anew holding data, owned by the CLI's uid
// (it may read and change it).
func (a Attempt) writeConfig(dir *os.File, name string, data []byte) error {
	dfd := int(dir.Fd())
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return planted(filepath.Join(filepath.Base(dir.Name()), name), "a regular file")
	case err == nil:
		if err := unix.Unlinkat(dfd, name, 0); err != nil {
			return fmt.Errorf("agent home: replacing %s: %w", name, err)
		}
	case !errors.Is(err, unix.ENOENT):
		return fmt.Errorf("agent home: %s: %w", name, err)
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("agent home: writing %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
	err = f.Chown(a.uid, a.gid)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("agent home: writing %s: %w", name, err)
	}
	return nil
}

// planted refuses what the attempt put where the worker writes: the round
// ends as the agent's failure, naming it.
func planted(name, want string) error {
	return agent.ChildFailureOf(fmt.Sprintf("the agent's home holds something other than %s at %s (a link or other file the attempt put there): refused", want, name))
}
