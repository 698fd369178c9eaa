package gitws

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/ralph-temporal/ralph/internal/readable"
)

// nestedRepos lists, relative to dir and slash-separated, every directory
// below dir that holds its own .git entry (a nested repository, a
// submodule, or a "gitdir:" file that may point at another workspace). git
// itself would open that .git to record the directory as a gitlink,
// reading its HEAD, refs and config, possibly outside the workspace; the
// worker's steps pass these as excluded pathspecs instead, so no step ever
// looks inside one. Symbolic links are not followed. Directory entries
// carry their type, so only directories are read, and only those changed
// since the last walk (see dirCache).
func nestedRepos(c *dirCache, dir string) ([]string, error) {
	// A directory a command made unreadable (0111) still shows git its
	// .git: it is made readable first, or the walk fails naming it.
	if err := readable.Tree(dir); err != nil {
		return nil, fmt.Errorf("look for nested repositories in %s: %w", dir, err)
	}
	var found []string
	noCheck := func(string, []fs.DirEntry) error { return nil }
	var walk func(abs, rel string) error
	walk = func(abs, rel string) error {
		l, err := c.list(walkWork, abs, rel == "", noCheck)
		var nd *notDirError
		switch {
		case errors.As(err, &nd) && rel != "":
			return nil // no longer a directory: git sees no directory either
		case errors.Is(err, fs.ErrPermission):
			return readable.Unreadable(abs, err)
		case err != nil:
			return err
		}
		if rel != "" && l.hasGit {
			found = append(found, rel)
			return nil // opaque: nothing below it is ours either
		}
		for _, name := range l.subdirs {
			sub := name
			if rel != "" {
				sub = rel + "/" + name
			}
			if err := walk(filepath.Join(abs, name), sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(dir, ""); err != nil {
		return nil, fmt.Errorf("look for nested repositories in %s: %w", dir, err)
	}
	return found, nil
}

// workPathspec is the pathspec of a step that walks the work tree: all of
// it but the nested repositories.
func (g *Git) workPathspec(dir string) ([]string, error) {
	nested, err := nestedRepos(g.dirs, dir)
	if err != nil {
		return nil, err
	}
	spec := []string{"--", "."}
	for _, rel := range nested {
		spec = append(spec, ":(top,literal,exclude)"+rel)
	}
	return spec, nil
}
