// Package readable makes a workspace tree fully readable to the worker
// before the worker walks it, so that no walk (nested repositories,
// protected paths, fingerprints) silently skips what a command hid behind a
// mode such as 0111 — git and the commands would still see it.
package readable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Error is a directory the worker can neither read nor make readable: the
// round cannot be checked, and retrying it cannot help.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("the worker cannot read the directory %s and cannot make it readable: %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Tree makes every directory below root (root included) readable and
// searchable by the worker: one it cannot open gets u+rx (the worker owns
// what its commands made; a root worker reads everything anyway) and is
// opened again. It fails with *Error naming the first it cannot fix.
// Symbolic links are not followed.
func Tree(root string) error {
	if os.Geteuid() == 0 {
		return nil // root reads and searches every directory
	}
	return dir(root)
}

func dir(path string) error {
	entries, err := os.ReadDir(path)
	if errors.Is(err, fs.ErrPermission) {
		entries, err = fix(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil // gone since it was listed
	}
	if err != nil {
		return &Error{Path: path, Err: err}
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := dir(filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// fix adds u+rx to path and lists it again.
func fix(path string) ([]fs.DirEntry, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, fi.Mode().Perm()|0o500); err != nil {
		return nil, err
	}
	return os.ReadDir(path)
}

// Unreadable is the error a walk returns for an entry it could not read
// (after Tree): never skipped, always naming the path.
func Unreadable(path string, err error) error {
	return &Error{Path: path, Err: err}
}
