package gitws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WorkTree returns the id of the tree the work tree holds now, untracked
// files included and ignored files left out (what `git add -A` would
// stage), without touching the repository's own index: it stages into a
// temporary copy of the index, so unchanged files are not read again.
// It is the workspace's fingerprint when checkpoints are on.
func (g *Git) WorkTree(ctx context.Context, dir string) (string, error) {
	tmpDir, err := os.MkdirTemp("", "ralph-git-index-")
	if err != nil {
		return "", fmt.Errorf("create a temporary index: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	path := filepath.Join(tmpDir, "index")
	if err := copyIndex(dir, path); err != nil {
		return "", err
	}
	spec, err := g.workPathspec(dir)
	if err != nil {
		return "", err
	}
	opts := cmdOpts{env: []string{"GIT_INDEX_FILE=" + path}}
	if _, err := g.run(ctx, dir, opts, append([]string{"add", "-A"}, spec...)...); err != nil {
		return "", fmt.Errorf("stage the work tree: %w", err)
	}
	out, err := g.run(ctx, dir, opts, "write-tree")
	if err != nil {
		return "", fmt.Errorf("write the work tree: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// copyIndex copies the repository's index (when it has one) to dst; with
// none, dst is not created (git refuses an empty index file).
func copyIndex(dir, dst string) error {
	in, err := openGitFile(dir, "index")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the index: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create a temporary index: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy the index: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write the temporary index: %w", err)
	}
	return nil
}

// head returns the commit HEAD names, or "" while HEAD is unborn.
func (g *Git) head(ctx context.Context, dir string) (string, error) {
	return g.resolve(ctx, dir, "HEAD")
}

// resolve returns the commit rev names, or "" when it names none.
func (g *Git) resolve(ctx context.Context, dir, rev string) (string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "rev-parse", "-q", "--verify", "--end-of-options", rev+"^{commit}")
	var ge *gitError
	if errors.As(err, &ge) && ge.exitCode == 1 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return strings.TrimSpace(out), nil
}

// treeOf returns the tree of a commit ("" names the empty tree's absence).
func (g *Git) treeOf(ctx context.Context, dir, commit string) (string, error) {
	// A commit this worker wrote names its tree in every repository.
	if tree, ok := g.wrote.tree(commit); ok {
		return tree, nil
	}
	out, err := g.run(ctx, dir, cmdOpts{}, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("read the tree of %s: %w", commit, err)
	}
	return strings.TrimSpace(out), nil
}

// emptyTree writes the empty tree and returns its id (in the repository's
// own hash format).
func (g *Git) emptyTree(ctx context.Context, dir string) (string, error) {
	out, err := g.run(ctx, dir, cmdOpts{}, "mktree")
	if err != nil {
		return "", fmt.Errorf("write the empty tree: %w", err)
	}
	return strings.TrimSpace(out), nil
}
