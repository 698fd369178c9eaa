package gitws

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafeRepo: the workspace's repository is set up so that a worker's git
// step could run a program the workspace chose (the model can write .git).
// Retrying does not help; a person must fix the repository.
var ErrUnsafeRepo = errors.New("unsafe workspace repository")

// allowedSections of the workspace's own .git/config: settings that change
// how git stores and compares files but name no program to run. Sections
// such as filter, diff, merge, credential, url, http, include and gpg can
// make a step run a program or send the worker's credentials elsewhere.
var allowedSections = []string{
	"core", "user", "author", "committer", "remote", "branch", "init", "extensions",
	"gc", "pack", "index", "fetch", "pull", "push", "color", "advice", "status",
	"log", "feature", "rerere", "maintenance", "fsck", "transfer", "submodule", "lfs",
}

// deniedKeys inside the allowed sections (lower case; "*" is one subsection).
var deniedKeys = []string{
	"core.sshcommand", "core.gitproxy", "core.askpass", "core.worktree",
	"core.alternaterefscommand", "extensions.worktreeconfig",
	"remote.*.vcs", "remote.*.uploadpack", "remote.*.receivepack",
	"submodule.*.update",
}

// checkRepo refuses a repository whose layout or configuration would let
// the workspace steer the worker's git: .git must be a plain directory (not a
// link or a "gitdir:" file pointing elsewhere) holding no link, special file
// or alternates file anywhere (checkGitTree), its config a plain file with
// only allowed keys; in remote mode no remote of its own, so nothing but
// RALPH_GIT_REMOTE can be what a remote step talks to.
func (g *Git) checkRepo(ctx context.Context, dir string) error {
	gitDir := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", gitDir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a plain directory (a link or a gitdir file would let the workspace choose the repository)", ErrUnsafeRepo, gitDir)
	}
	for _, name := range []string{"commondir", "config.worktree"} {
		if _, err := os.Lstat(filepath.Join(gitDir, name)); err == nil {
			return fmt.Errorf("%w: %s exists (it would bring configuration from outside .git/config)", ErrUnsafeRepo, filepath.Join(gitDir, name))
		}
	}
	if err := checkGitTree(g.dirs, gitDir); err != nil {
		return err
	}
	if g.cfg.Mode == ModeRemote {
		// Named remotes outside the config: git reads them for a remote
		// argument without a '/', as an scp-like URL can be.
		for _, name := range []string{"remotes", "branches"} {
			if _, err := os.Lstat(filepath.Join(gitDir, name)); err == nil {
				return fmt.Errorf("%w: %s exists (it can name a remote that redirects %s)", ErrUnsafeRepo, filepath.Join(gitDir, name), SettingRemote)
			}
		}
	}
	if err := removeStaleLocks(dir); err != nil {
		return err
	}
	return g.checkConfig(ctx, dir, filepath.Join(gitDir, "config"))
}

// checkConfig refuses a repository config that is not a plain file or sets
// a key that would let the workspace steer the worker's git (deniedKey; in
// remote mode any remote).
func (g *Git) checkConfig(ctx context.Context, dir, cfgPath string) error {
	fi, err := os.Lstat(cfgPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect %s: %w", cfgPath, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafeRepo, cfgPath)
	}
	// A config unchanged since a read that found it safe is not read
	// again: the same (device, inode, ctime) rule as the safety walks'
	// directories (dircache.go), the stat taken before the read.
	cached := dirKey{checkedConfig, cfgPath}
	if _, ok := g.dirs.get(cached, fi); ok {
		return nil
	}
	readAt := g.dirs.clock()
	out, err := g.run(ctx, dir, cmdOpts{}, "config", "--file", cfgPath, "--no-includes", "--name-only", "--list")
	if err != nil {
		return fmt.Errorf("read %s: %w", cfgPath, err)
	}
	for _, key := range strings.Split(strings.TrimSpace(out), "\n") {
		if key == "" {
			continue
		}
		lower := strings.ToLower(key)
		why := deniedKey(lower)
		if why == "" && g.cfg.Mode == ModeRemote && strings.HasPrefix(lower, "remote.") {
			why = "could redirect the worker's fetch and push away from " + SettingRemote
		}
		if why != "" {
			return fmt.Errorf("%w: %s sets %s, which %s; checkpoints never run it with the worker's credentials (remove it: git config --unset-all %s)",
				ErrUnsafeRepo, cfgPath, key, why, key)
		}
	}
	g.dirs.put(cached, fi, readAt, listing{})
	return nil
}

// alternatesFiles would make git read objects from another repository.
var alternatesFiles = []string{"objects/info/alternates", "objects/info/http-alternates"}

// checkGitTree refuses a symbolic link or special file anywhere inside
// .git, and an alternates file: through any of them a step would read or
// write another workspace's refs and objects, or a host file, or block on
// a FIFO. Directory entries carry their type, so this reads directories
// only and never stats or opens a file; a directory unchanged since the
// last walk (see dirCache) is not read again.
func checkGitTree(c *dirCache, gitDir string) error {
	for _, rel := range alternatesFiles {
		if _, err := os.Lstat(filepath.Join(gitDir, rel)); err == nil {
			return fmt.Errorf("%w: %s exists (it would make the worker's git read another repository's objects)", ErrUnsafeRepo, filepath.Join(gitDir, rel))
		}
	}
	var walk func(dir string, root bool) error
	walk = func(dir string, root bool) error {
		l, err := c.list(walkGitDir, dir, root, func(dir string, entries []fs.DirEntry) error {
			for _, e := range entries {
				if err := gitTreeEntry(filepath.Join(dir, e.Name()), e.Type()); err != nil {
					return err
				}
			}
			return nil
		})
		var nd *notDirError
		if errors.As(err, &nd) {
			return gitTreeEntry(nd.path, nd.mode)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", dir, err)
		}
		for _, name := range l.subdirs {
			if err := walk(filepath.Join(dir, name), false); err != nil {
				return err
			}
		}
		if l.hasGit {
			// .git inside .git: a directory walks like any other.
			return walk(filepath.Join(dir, ".git"), false)
		}
		return nil
	}
	return walk(gitDir, false) // checkRepo found .git a directory; a link now is refused
}

// gitTreeEntry refuses an entry of .git that is neither a regular file nor
// a directory.
func gitTreeEntry(path string, t fs.FileMode) error {
	switch {
	case t.IsDir(), t.IsRegular():
		return nil
	case t&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link (inside .git it would let the workspace choose what the worker's git reads and writes)", ErrUnsafeRepo, path)
	default:
		return fmt.Errorf("%w: %s is not a regular file or directory", ErrUnsafeRepo, path)
	}
}

// deniedKey says why a config key is refused, or "" when it is allowed.
func deniedKey(key string) string {
	section, rest, _ := strings.Cut(key, ".")
	allowed := false
	for _, s := range allowedSections {
		allowed = allowed || s == section
	}
	if !allowed {
		return "is outside the settings a checkpoint allows (it can name a program, a credential or another URL)"
	}
	sub, name := "", rest
	if i := strings.LastIndex(rest, "."); i >= 0 {
		sub, name = "*.", rest[i+1:]
	}
	for _, d := range deniedKeys {
		if d == section+"."+sub+name {
			return "names a program or another work tree"
		}
	}
	return ""
}

// staleLocks are lock files a killed git (the model's or ours) can leave in
// .git; while one stays every later step fails.
var staleLocks = []string{"index.lock", "HEAD.lock"}

// removeStaleLocks deletes them. The caller holds the workspace lock and no
// command of the session runs any more, so no live git owns them.
func removeStaleLocks(dir string) error {
	for _, name := range staleLocks {
		path := filepath.Join(dir, ".git", name)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the stale %s: %w", path, err)
		}
	}
	return nil
}
