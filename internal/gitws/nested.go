package gitws

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// nestedRepos lists, relative to dir and slash-separated, every directory
// below dir that holds its own .git entry (a nested repository, a
// submodule, or a "gitdir:" file that may point at another workspace). git
// itself would open that .git to record the directory as a gitlink,
// reading its HEAD, refs and config, possibly outside the workspace; the
// worker's steps pass these as excluded pathspecs instead, so no step ever
// looks inside one. Symbolic links are not followed. Directory entries
// carry their type, so only directories are read.
func nestedRepos(dir string) ([]string, error) {
	var found []string
	var walk func(abs, rel string) error
	walk = func(abs, rel string) error {
		f, err := os.Open(abs)
		if errors.Is(err, fs.ErrPermission) && rel != "" {
			return nil // git cannot read it either: it warns and goes on
		}
		if err != nil {
			return err
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		if rel != "" {
			for _, e := range entries {
				if e.Name() == ".git" {
					found = append(found, rel)
					return nil // opaque: nothing below it is ours either
				}
			}
		}
		for _, e := range entries {
			if !e.IsDir() || (rel == "" && e.Name() == ".git") {
				continue
			}
			sub := e.Name()
			if rel != "" {
				sub = rel + "/" + e.Name()
			}
			if err := walk(filepath.Join(abs, e.Name()), sub); err != nil {
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
func workPathspec(dir string) ([]string, error) {
	nested, err := nestedRepos(dir)
	if err != nil {
		return nil, err
	}
	spec := []string{"--", "."}
	for _, rel := range nested {
		spec = append(spec, ":(top,literal,exclude)"+rel)
	}
	return spec, nil
}
