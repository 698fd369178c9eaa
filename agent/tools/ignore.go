package tools

import (
	"errors"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Names that decide what listings and searches leave out.
const (
	// GitDirName is never listed or searched: it is large, binary and the
	// business of git commands, not of file-by-file browsing.
	GitDirName = ".git"
	// GitignoreName files, in any directory, ignore paths below it.
	GitignoreName = ".gitignore"
	// GitInfoExclude holds the repository's own untracked ignore patterns.
	GitInfoExclude = ".git/info/exclude"
	// GitignoreMaxBytes bounds one ignore file; larger ones are not read.
	GitignoreMaxBytes = 1 << 20
)

// ignoreRules are the gitignore patterns that apply inside one directory:
// its own .gitignore's and those of every directory above it, in
// increasing priority, which is the order the matcher expects.
type ignoreRules struct {
	patterns []gitignore.Pattern
}

// ignored reports whether the .gitignore files leave the entry at rel
// (slash-separated, relative to the workspace root) out. A directory that is
// left out is not entered, so nothing below it is re-included, as in git.
// .git itself is no ignored entry: the walkers skip it before asking.
func (r ignoreRules) ignored(rel string, isDir bool) bool {
	if len(r.patterns) == 0 {
		return false
	}
	return gitignore.NewMatcher(r.patterns).Match(strings.Split(rel, "/"), isDir)
}

// enter returns the rules inside dir (relative to the root), which are
// these plus dir's own .gitignore.
func (r ignoreRules) enter(w *Workspace, dir string) ignoreRules {
	own := w.readIgnoreFile(path.Join(dir, GitignoreName), dir)
	if len(own) == 0 {
		return r
	}
	// Clip so that sibling directories never share an appended tail.
	return ignoreRules{patterns: append(slices.Clip(r.patterns), own...)}
}

// errInGitDir refuses to list or search inside .git.
var errInGitDir = errors.New(GitDirName + " is left out of listings and searches; use run_command with git commands to inspect the repository")

// rulesAt returns the rules that apply inside start, a directory relative
// to the root. A start that is itself ignored (or lies in an ignored
// directory) was named on purpose: it is then walked with its own ignore
// files only, as if it were a workspace of its own.
func (w *Workspace) rulesAt(start string) (ignoreRules, error) {
	if inGitDir(start) {
		return ignoreRules{}, errInGitDir
	}
	rules := ignoreRules{patterns: w.readIgnoreFile(GitInfoExclude, ".")}.enter(w, ".")
	if start == "." {
		return rules, nil
	}
	dir := "."
	for _, name := range strings.Split(start, "/") {
		dir = path.Join(dir, name)
		if rules.ignored(dir, true) {
			return ignoreRules{}.enter(w, start), nil
		}
		rules = rules.enter(w, dir)
	}
	return rules, nil
}

// errGitProtected refuses a write under .git in git modes.
var errGitProtected = errors.New("paths with a " + GitDirName + " component are not written in git modes: the worker's git checkpoints own the repository (use run_command with git commands to read it)")

// checkGitWrite refuses, in git modes, a write whose path or whose real
// location (through symlinks, which the write would follow) has a .git
// component at any depth: the outer repository and every nested one.
func (w *Workspace) checkGitWrite(rel string) error {
	if !w.sb.ProtectsGit() {
		return nil
	}
	if inGitDir(rel) {
		return errGitProtected
	}
	root, err := filepath.EvalSymlinks(w.dir)
	if err != nil {
		return err
	}
	// The deepest existing ancestor (or the path itself), resolved; a
	// location outside the workspace is os.Root's to refuse.
	cur := rel
	for {
		real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(cur)))
		if err == nil {
			inside, err := filepath.Rel(root, real)
			if err == nil && filepath.IsLocal(inside) && inGitDir(filepath.ToSlash(inside)) {
				return errGitProtected
			}
			return nil
		}
		if cur == "." {
			return nil
		}
		cur = path.Dir(cur)
	}
}

// inGitDir reports whether rel (relative to the root) is .git or lies in one.
func inGitDir(rel string) bool {
	return slices.Contains(strings.Split(rel, "/"), GitDirName)
}

// readIgnoreFile parses the patterns of the ignore file at rel, which
// apply below domain. A missing, oversized, unreadable or non-regular file
// (a symlink included, which git does not follow either) has none.
func (w *Workspace) readIgnoreFile(rel, domain string) []gitignore.Pattern {
	info, err := w.root.Lstat(rel)
	if err != nil || !info.Mode().IsRegular() || info.Size() > GitignoreMaxBytes {
		return nil
	}
	f, _, err := w.openRegular(rel)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, GitignoreMaxBytes))
	f.Close()
	if err != nil {
		return nil
	}
	var dom []string
	if domain != "." {
		dom = strings.Split(domain, "/")
	}
	var ps []gitignore.Pattern
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, dom))
	}
	return ps
}
