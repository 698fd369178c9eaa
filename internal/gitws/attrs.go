package gitws

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// NeutralAttributes is what every repository the worker's git drives reads
// as its $GIT_DIR/info/attributes, the highest-precedence attributes file:
// each attribute that converts bytes or names a driver is unspecified for
// every path, whatever a .gitattributes in the tree (the model's) or a macro
// such as "binary" says. So a checkout, merge, add or diff by the worker's
// git handles the bytes as they are, and a .gitattributes the model writes
// is committed as a plain file. (git 2.39 has no --attr-source.)
const NeutralAttributes = "* !text !crlf !eol !working-tree-encoding !ident !filter !diff !merge" +
	" !conflict-marker-size !export-ignore !export-subst\n"

// attributesFile is NeutralAttributes' place inside the git directory.
const attributesFile = "info/attributes"

// neutralizeAttributes makes the repository at dir (dir/.git, or dir itself
// when it is a bare repository) read NeutralAttributes; a directory that is
// no repository yet (before git init or clone) is left alone. It runs before
// every git command of the worker (run), as the model may have rewritten
// .git since the last one. The file is written through an os.Root on the git
// directory, replaced by a rename, and never through a link: a link planted
// as .git/info leads nowhere outside the git directory and is refused.
func neutralizeAttributes(dir string) error {
	gitDir, err := gitDirOf(dir)
	if gitDir == "" || err != nil {
		return err
	}
	root, err := os.OpenRoot(gitDir)
	if err != nil {
		return fmt.Errorf("open %s to write the worker's attributes: %w", gitDir, err)
	}
	defer root.Close()
	fi, err := root.Lstat("info")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := root.Mkdir("info", 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Join(gitDir, "info"), err)
		}
	case err != nil:
		return fmt.Errorf("inspect %s: %w", filepath.Join(gitDir, "info"), err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a plain directory (the worker writes its attributes there)", ErrUnsafeRepo, filepath.Join(gitDir, "info"))
	}
	if holdsNeutral(root) {
		return nil
	}
	tmp := attributesFile + ".ralph-" + randomSuffix()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("write the worker's attributes in %s: %w", gitDir, err)
	}
	_, werr := f.Write([]byte(NeutralAttributes))
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write the worker's attributes in %s: %w", gitDir, err)
	}
	if err := root.Rename(tmp, attributesFile); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("%w: cannot put the worker's attributes at %s: %v", ErrUnsafeRepo, filepath.Join(gitDir, attributesFile), err)
	}
	return nil
}

// gitDirOf is the git directory of the repository at dir: dir/.git when it
// is a directory, dir when dir is a bare repository, "" when dir holds no
// repository yet. A .git that is a link or a "gitdir:" file is refused, as
// checkRepo refuses it.
func gitDirOf(dir string) (string, error) {
	gitDir := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitDir)
	switch {
	case err == nil && fi.IsDir():
		return gitDir, nil
	case err == nil:
		return "", fmt.Errorf("%w: %s is not a plain directory (a link or a gitdir file would let the workspace choose the repository)", ErrUnsafeRepo, gitDir)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("inspect %s: %w", gitDir, err)
	}
	head, herr := os.Lstat(filepath.Join(dir, "HEAD"))
	objects, oerr := os.Lstat(filepath.Join(dir, "objects"))
	if herr == nil && oerr == nil && head.Mode().IsRegular() && objects.IsDir() {
		return dir, nil // bare
	}
	return "", nil
}

// holdsNeutral: info/attributes is a regular file holding exactly
// NeutralAttributes (opened without following a link or blocking on a FIFO).
func holdsNeutral(root *os.Root) bool {
	f, err := root.OpenFile(attributesFile, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(NeutralAttributes)) {
		return false
	}
	got, err := io.ReadAll(io.LimitReader(f, int64(len(NeutralAttributes))+1))
	return err == nil && bytes.Equal(got, []byte(NeutralAttributes))
}

func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
