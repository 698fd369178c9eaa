package gitws

import (
	"context"
	"errors"
	"fmt"
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
}

// checkRepo refuses a repository whose layout or configuration would let
// the workspace steer the worker's git: .git must be a plain directory (not a
// link or a "gitdir:" file pointing elsewhere), its config a plain file with
// only allowed keys.
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
	if err := removeStaleLocks(dir); err != nil {
		return err
	}
	cfgPath := filepath.Join(gitDir, "config")
	fi, err = os.Lstat(cfgPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect %s: %w", cfgPath, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrUnsafeRepo, cfgPath)
	}
	out, err := g.run(ctx, dir, cmdOpts{}, "config", "--file", cfgPath, "--no-includes", "--name-only", "--list")
	if err != nil {
		return fmt.Errorf("read %s: %w", cfgPath, err)
	}
	for _, key := range strings.Split(strings.TrimSpace(out), "\n") {
		if key == "" {
			continue
		}
		if why := deniedKey(strings.ToLower(key)); why != "" {
			return fmt.Errorf("%w: %s sets %s, which %s; checkpoints never run it with the worker's credentials (remove it: git config --unset-all %s)",
				ErrUnsafeRepo, cfgPath, key, why, key)
		}
	}
	return nil
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
