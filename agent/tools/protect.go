package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/ralph-temporal/ralph/internal/readable"
)

// Protected paths (docs/guards.md#protected-paths): gitignore-style patterns the model may
// read but never create, change, rename or delete. Three guards share this
// one matcher: the file tools refuse, the sandbox mounts what already
// matches read-only, and the session restores whatever changed anyway
// (through run_command where no read-only mount applies) before a report
// is accepted.
const (
	// MaxProtectedPatterns bounds one set of patterns.
	MaxProtectedPatterns = 64
	// MaxProtectedPatternChars bounds one pattern in code points.
	MaxProtectedPatternChars = 256
	// MaxProtectedSnapshotBytes bounds what a snapshot of the protected
	// paths holds in memory; a workspace whose protected files are larger
	// cannot be guarded by restoring and the session refuses to start.
	MaxProtectedSnapshotBytes = 256 << 20
	// MaxReadOnlyMounts bounds the read-only mounts of protected files one
	// command gets; past it the restore check alone guards the rest.
	MaxReadOnlyMounts = 256
)

// CheckProtectedPattern says what is wrong with one pattern, or nil.
func CheckProtectedPattern(p string) error {
	switch {
	case p == "":
		return errors.New("must not be empty")
	case strings.TrimSpace(p) != p:
		return errors.New("must not start or end with whitespace")
	case utf8.RuneCountInString(p) > MaxProtectedPatternChars:
		return fmt.Errorf("is %d characters, over the limit of %d", utf8.RuneCountInString(p), MaxProtectedPatternChars)
	case strings.ContainsAny(p, "\n\r\x00"):
		return errors.New("must be one line")
	}
	body := strings.TrimSuffix(strings.TrimPrefix(p, "!"), "/")
	if strings.Trim(body, "/") == "" {
		return errors.New("names no path")
	}
	for _, seg := range strings.Split(body, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("is not a valid gitignore pattern (%v)", err)
		}
	}
	return nil
}

// Protected matches paths against independent sets of gitignore-style
// patterns. Within a set the last matching pattern wins (so "!x" re-allows
// what an earlier pattern protected); a path is protected when any set
// protects it, so one set (a run's input) cannot re-allow what another (the
// deployment's) protects. A nil *Protected protects nothing.
type Protected struct {
	sets []patternSet
}

type patternSet struct {
	raw      []string
	patterns []gitignore.Pattern
}

// ParseProtected checks every pattern and returns the matcher, or nil when
// there are no patterns at all.
func ParseProtected(sets ...[]string) (*Protected, error) {
	p := &Protected{}
	for _, set := range sets {
		if len(set) == 0 {
			continue
		}
		if len(set) > MaxProtectedPatterns {
			return nil, fmt.Errorf("protected paths: %d patterns, more than %d", len(set), MaxProtectedPatterns)
		}
		ps := patternSet{raw: slices.Clone(set)}
		for _, raw := range set {
			if err := CheckProtectedPattern(raw); err != nil {
				return nil, fmt.Errorf("protected path pattern %q %v", raw, err)
			}
			ps.patterns = append(ps.patterns, gitignore.ParsePattern(raw, nil))
		}
		p.sets = append(p.sets, ps)
	}
	if len(p.sets) == 0 {
		return nil, nil
	}
	return p, nil
}

// Match reports whether rel (slash-separated, relative to the workspace
// root) is protected, and by which pattern. A file inside a protected
// directory is protected too.
func (p *Protected) Match(rel string, isDir bool) (string, bool) {
	if p == nil || rel == "." || rel == "" {
		return "", false
	}
	parts := strings.Split(rel, "/")
	for _, set := range p.sets {
		for i := len(set.patterns) - 1; i >= 0; i-- {
			switch set.patterns[i].Match(parts, isDir) {
			case gitignore.Exclude:
				return set.raw[i], true
			case gitignore.Include:
				i = -1 // re-allowed in this set; the next set may still protect it
			}
		}
	}
	return "", false
}

// protectedRefusal is the file tools' answer for a protected path.
func protectedRefusal(tool, p, pattern string) Result {
	return failf("%s: %s is protected (pattern %q): protected paths may be read but not created, changed, renamed or deleted in this run", tool, p, pattern)
}

// checkWritable refuses a write to rel (and, when it differs, to the file a
// symlink at rel leads to) when either is protected.
func (w *Workspace) checkWritable(tool, shown string, rels ...string) (Result, bool) {
	for _, rel := range rels {
		if pattern, ok := w.protected.Match(rel, false); ok {
			return protectedRefusal(tool, shown, pattern), false
		}
	}
	return Result{}, true
}

// protectedEntry is one protected path as the round found it.
type protectedEntry struct {
	mode fs.FileMode
	data []byte // regular files
	link string // symlinks
}

// ProtectedSnapshot is the state of every protected path at the start of a
// session.
type ProtectedSnapshot struct {
	entries map[string]protectedEntry
}

// Len is how many protected paths the snapshot holds.
func (s *ProtectedSnapshot) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// SnapshotProtected records every protected path of the workspace (.git
// left out) and makes the protected regular files that exist the read-only
// mounts of this workspace's commands. Without protected patterns it
// returns nil.
func (w *Workspace) SnapshotProtected() (*ProtectedSnapshot, error) {
	if w.protected == nil {
		return nil, nil
	}
	snap := &ProtectedSnapshot{entries: map[string]protectedEntry{}}
	total := 0
	var ro []string
	err := w.walkProtected(func(rel string, d fs.DirEntry) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := protectedEntry{mode: info.Mode()}
		switch {
		case info.Mode().IsRegular():
			if total += int(info.Size()); total > MaxProtectedSnapshotBytes {
				return fmt.Errorf("the protected paths hold more than %d bytes; protect fewer or smaller files", MaxProtectedSnapshotBytes)
			}
			if e.data, err = w.root.ReadFile(rel); err != nil {
				return err
			}
			if len(ro) < MaxReadOnlyMounts {
				ro = append(ro, filepath.Join(w.dir, filepath.FromSlash(rel)))
			}
		case info.Mode()&fs.ModeSymlink != 0:
			if e.link, err = w.root.Readlink(rel); err != nil {
				return err
			}
		case info.IsDir():
		default:
			return nil // sockets, fifos: nothing to restore
		}
		snap.entries[rel] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot the protected paths: %w", err)
	}
	w.readOnly = ro
	return snap, nil
}

// walkProtected calls fn for every protected entry below the root, parents
// before children; .git is never entered.
func (w *Workspace) walkProtected(fn func(rel string, d fs.DirEntry) error) error {
	// Nothing is skipped: a directory a command made unreadable is made
	// readable first, or the walk fails naming it.
	if err := readable.Tree(w.dir); err != nil {
		return err
	}
	return fs.WalkDir(w.root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if rel != "." && errors.Is(err, fs.ErrNotExist) {
				return nil // vanished since it was listed: nothing to record
			}
			return readable.Unreadable(filepath.Join(w.dir, rel), err)
		}
		if rel == "." {
			return nil
		}
		if d.IsDir() && d.Name() == GitDirName {
			return fs.SkipDir
		}
		if _, ok := w.protected.Match(rel, d.IsDir()); !ok {
			return nil
		}
		return fn(rel, d)
	})
}

// RestoreProtected brings every protected path back to its state in snap:
// content and mode of changed files, deleted ones recreated, created ones
// removed. It returns the restored paths, sorted.
func (w *Workspace) RestoreProtected(snap *ProtectedSnapshot) ([]string, error) {
	if snap == nil {
		return nil, nil
	}
	var restored, created []string
	seen := map[string]bool{}
	err := w.walkProtected(func(rel string, d fs.DirEntry) error {
		seen[rel] = true
		want, ok := snap.entries[rel]
		if !ok {
			created = append(created, rel) // a directory's protected contents follow it
			return nil
		}
		same, err := w.sameAs(rel, want)
		if err != nil {
			return err
		}
		if !same {
			if err := w.restoreEntry(rel, want); err != nil {
				return err
			}
			restored = append(restored, rel)
			if want.mode.IsDir() != d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("restore the protected paths: %w", err)
	}
	// Created paths go children first, so a created directory is empty
	// when its turn comes (unless it holds unprotected files, which stay).
	slices.Reverse(created)
	for _, rel := range created {
		if err := w.root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			var pe *fs.PathError
			if errors.As(err, &pe) && isNotEmpty(pe.Err) {
				continue
			}
			return nil, fmt.Errorf("restore the protected paths: remove %s: %w", rel, err)
		}
		restored = append(restored, rel)
	}
	// Deleted paths come back parents first.
	keys := make([]string, 0, len(snap.entries))
	for rel := range snap.entries {
		if !seen[rel] {
			keys = append(keys, rel)
		}
	}
	slices.Sort(keys)
	for _, rel := range keys {
		if _, err := w.root.Lstat(rel); err == nil {
			continue // restored with a replaced parent above
		}
		if err := w.restoreEntry(rel, snap.entries[rel]); err != nil {
			return nil, fmt.Errorf("restore the protected paths: %w", err)
		}
		restored = append(restored, rel)
	}
	slices.Sort(restored)
	return slices.Compact(restored), nil
}

func isNotEmpty(err error) bool {
	return err != nil && strings.Contains(err.Error(), "directory not empty")
}

// sameAs reports whether rel still is what want recorded.
func (w *Workspace) sameAs(rel string, want protectedEntry) (bool, error) {
	info, err := w.root.Lstat(rel)
	if err != nil {
		return false, nil
	}
	if info.Mode() != want.mode {
		return false, nil
	}
	switch {
	case want.mode.IsRegular():
		if info.Size() != int64(len(want.data)) {
			return false, nil
		}
		data, err := w.root.ReadFile(rel)
		if err != nil {
			return false, err
		}
		return bytes.Equal(data, want.data), nil
	case want.mode&fs.ModeSymlink != 0:
		link, err := w.root.Readlink(rel)
		return err == nil && link == want.link, nil
	}
	return true, nil
}

// restoreEntry puts want back at rel. Whatever is there is removed first
// and the file created anew, so a hard link or symlink the model placed
// there is never written through.
func (w *Workspace) restoreEntry(rel string, want protectedEntry) error {
	if info, err := w.root.Lstat(rel); err == nil {
		if !(info.IsDir() && want.mode.IsDir()) {
			if err := w.root.RemoveAll(rel); err != nil {
				return fmt.Errorf("remove %s: %w", rel, err)
			}
		}
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.root.MkdirAll(dir, NewDirPerm); err != nil {
			return fmt.Errorf("recreate the directory of %s: %w", rel, err)
		}
	}
	perm := want.mode.Perm()
	switch {
	case want.mode.IsDir():
		if err := w.root.MkdirAll(rel, perm); err != nil {
			return fmt.Errorf("recreate %s: %w", rel, err)
		}
		return w.root.Chmod(rel, perm)
	case want.mode&fs.ModeSymlink != 0:
		return w.root.Symlink(want.link, rel)
	}
	f, err := w.root.OpenFile(rel, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("recreate %s: %w", rel, err)
	}
	if _, err := f.Write(want.data); err != nil {
		f.Close()
		return fmt.Errorf("recreate %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("recreate %s: %w", rel, err)
	}
	return w.root.Chmod(rel, want.mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}
