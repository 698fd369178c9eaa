package tools

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// MaxSymlinkHops bounds how many symlinks a write follows to find the file
// it replaces, as the kernel bounds path resolution.
const MaxSymlinkHops = 40

// tempFilePrefix starts the name of the temporary file a write renames
// into place; the leading dot keeps it out of casual listings.
const tempFilePrefix = ".ralph-write-"

// writeTarget is the file a write to a workspace path replaces.
type writeTarget struct {
	rel  string      // the file itself: the path, or where its symlinks lead
	info fs.FileInfo // nil when the file does not exist yet
}

// errNoSymlinkTarget words a write through a symlink the workspace cannot
// resolve to a file of its own.
var errNoSymlinkTarget = errors.New("it is a symlink whose target cannot be resolved inside the workspace")

// resolveWriteTarget finds the file a write to rel must replace. A rename
// replaces a symlink rather than writing through it, so symlinks are
// followed here, each step confined by the root, and the result checked to
// be the very file the path opens. It refuses directories, non-regular
// files and files with more than one hard link: another link to the file
// could lie outside the workspace, and it would silently stop sharing the
// content. The error text is meant for the model.
func (w *Workspace) resolveWriteTarget(rel string) (writeTarget, error) {
	cur := rel
	for range MaxSymlinkHops {
		info, err := w.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if cur != rel {
				// A dangling link: the write creates its target, which
				// must be the file the path itself would open.
				if _, serr := w.root.Stat(rel); !errors.Is(serr, fs.ErrNotExist) {
					return writeTarget{}, errNoSymlinkTarget
				}
			}
			return writeTarget{rel: cur}, nil
		}
		if err != nil {
			return writeTarget{}, errors.New(errReason(err))
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return w.checkWriteTarget(rel, cur, info)
		}
		link, err := w.root.Readlink(cur)
		if err != nil {
			return writeTarget{}, errors.New(errReason(err))
		}
		if path.IsAbs(link) {
			return writeTarget{}, errors.New("it is a symlink to an absolute path, which leads outside the workspace")
		}
		next, err := resolvePath(path.Join(path.Dir(cur), link))
		if err != nil {
			return writeTarget{}, errors.New("it is a symlink that leads outside the workspace")
		}
		cur = next
	}
	return writeTarget{}, fmt.Errorf("it is a chain of more than %d symlinks", MaxSymlinkHops)
}

// checkWriteTarget applies the rules on the file found at cur for the
// path rel.
func (w *Workspace) checkWriteTarget(rel, cur string, info fs.FileInfo) (writeTarget, error) {
	if cur != rel {
		// The lexical walk above must agree with the kernel's resolution.
		opened, err := w.root.Stat(rel)
		if err != nil {
			return writeTarget{}, errors.New(errReason(err))
		}
		if !os.SameFile(opened, info) {
			return writeTarget{}, errNoSymlinkTarget
		}
	}
	switch {
	case info.IsDir():
		return writeTarget{}, errors.New("it is a directory")
	case !info.Mode().IsRegular():
		return writeTarget{}, errors.New("it is not a regular file") // a FIFO would block
	case linkCount(info) > 1:
		return writeTarget{}, fmt.Errorf("it has %d hard links; another link could lie outside the workspace, so it is not written (copy it to a new file with run_command if you must change it)", linkCount(info))
	}
	return writeTarget{rel: cur, info: info}, nil
}

// replaceFile writes data to a temporary file in the target's directory and
// renames it over the target, so readers see the old content or the new,
// never a part. An existing target's permission bits are kept; a new file
// gets NewFilePerm (less the umask). On failure the target is untouched
// and the temporary file is removed.
func (w *Workspace) replaceFile(t writeTarget, data []byte) error {
	perm := NewFilePerm
	if t.info != nil {
		perm = t.info.Mode().Perm()
	}
	tmp := path.Join(path.Dir(t.rel), tempFilePrefix+rand.Text()+".tmp")
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("creating a temporary file beside it: %s", errReason(err))
	}
	err = writeAndClose(f, data, perm, t.info != nil)
	if err == nil {
		if rerr := w.root.Rename(tmp, t.rel); rerr != nil {
			err = fmt.Errorf("renaming the temporary file over it: %s", errReason(rerr))
		}
	}
	if err != nil {
		_ = w.root.Remove(tmp)
	}
	return err
}

// writeAndClose fills a new temporary file and makes it durable before it
// is renamed into place; keepMode restores bits the umask removed.
func writeAndClose(f *os.File, data []byte, perm fs.FileMode, keepMode bool) error {
	_, err := f.Write(data)
	if err == nil && keepMode {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing a temporary file beside it: %s", errReason(err))
	}
	return nil
}
