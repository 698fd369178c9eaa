package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// ListMaxEntries bounds a recursive listing so that a huge tree (vendored
// dependencies, build output) cannot flood the model's context.
const ListMaxEntries = 1000

// ListMaxIgnoredNames is how many of the ignored entries a listing names,
// so the model knows they exist (and can name one as path) without a
// flood of them.
const ListMaxIgnoredNames = 10

type listFilesParams struct {
	Path string `json:"path,omitempty" description:"Directory to list, relative to the workspace root. Default: the workspace root."`
}

type listFilesTool struct {
	spec[listFilesParams]
	w *Workspace
}

// listing is what one walk collected.
type listing struct {
	entries   []string
	truncated bool     // stopped at ListMaxEntries
	ignored   []string // entries left out by .gitignore at the levels walked
}

func (t listFilesTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
		return failf("%v", err), nil
	}
	if p.Path == "" {
		p.Path = "."
	}
	start, err := resolvePath(p.Path)
	if err != nil {
		return failf("list_files: %v", err), nil
	}
	info, err := fs.Stat(t.w.root.FS(), start)
	if err != nil {
		return failf("list_files: %s", describePathError(p.Path, err)), nil
	}
	if !info.IsDir() {
		return failf("list_files: %s is a file, not a directory; use read_file", p.Path), nil
	}
	rules, err := t.w.rulesAt(start)
	if err != nil {
		return failf("list_files: %v", err), nil
	}

	l, err := t.collect(ctx, start, rules)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, err
		}
		return failf("list_files: %s", describePathError(p.Path, err)), nil
	}
	if len(l.entries) == 0 {
		msg := fmt.Sprintf("%s is an empty directory", p.Path)
		if len(l.ignored) > 0 {
			msg = fmt.Sprintf("%s holds only entries ignored by .gitignore: %s; name one as path to list it", p.Path, ignoredNames(l.ignored))
		}
		return Result{Output: msg}, nil
	}
	// Breadth-first collection keeps the shallow levels when truncating;
	// sorting afterwards restores a readable tree order.
	slices.Sort(l.entries)
	var b strings.Builder
	runes := 0
	for i, e := range l.entries {
		if runes+utf8.RuneCountInString(e)+1 > t.w.limits.OutputCap {
			fmt.Fprintf(&b, "[listing cut at the %d-character output cap after %d of %d entries; list a subdirectory to see more]\n", t.w.limits.OutputCap, i, len(l.entries))
			return Result{Output: b.String()}, nil
		}
		b.WriteString(e)
		b.WriteByte('\n')
		runes += utf8.RuneCountInString(e) + 1
	}
	if l.truncated {
		fmt.Fprintf(&b, "[listing stopped at %d entries; deeper entries are omitted, list a subdirectory to see more]\n", ListMaxEntries)
	}
	if len(l.ignored) > 0 {
		what := fmt.Sprintf("%d entries ignored by .gitignore were", len(l.ignored))
		if len(l.ignored) == 1 {
			what = "1 entry ignored by .gitignore was"
		}
		fmt.Fprintf(&b, "[%s left out: %s; name one as path to list it]\n", what, ignoredNames(l.ignored))
	}
	return Result{Output: b.String()}, nil
}

// collect walks the tree under start breadth-first without following
// symlinks, leaving out .git and ignored entries, and returns at most
// ListMaxEntries display lines. An error is either ctx's or the failure to
// read start itself.
func (t listFilesTool) collect(ctx context.Context, start string, startRules ignoreRules) (listing, error) {
	// A queued directory carries its parent's rules; its own .gitignore is
	// read only when it is reached, so a cut listing reads no more of them.
	type dir struct {
		rel    string
		parent ignoreRules
	}
	var l listing
	queue := []dir{{rel: start}}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return listing{}, err
		}
		d := queue[0]
		queue = queue[1:]
		rules := startRules
		if d.rel != start {
			rules = d.parent.enter(t.w, d.rel)
		}
		des, err := fs.ReadDir(t.w.root.FS(), d.rel)
		if err != nil {
			if d.rel == start {
				return listing{}, err
			}
			// An unreadable subdirectory is noted, not fatal for the listing.
			l.entries = append(l.entries, fmt.Sprintf("%s/* (unreadable: %s)", d.rel, errReason(err)))
			continue
		}
		for _, de := range des {
			if de.Name() == GitDirName {
				continue // never listed, not even as ignored
			}
			rel := path.Join(d.rel, de.Name())
			isDir := de.IsDir()
			if rules.ignored(rel, isDir) {
				if isDir {
					rel += "/"
				}
				l.ignored = append(l.ignored, rel)
				continue
			}
			if len(l.entries) >= ListMaxEntries {
				l.truncated = true
				return l, nil
			}
			switch {
			case de.Type()&fs.ModeSymlink != 0:
				target, lerr := t.w.root.Readlink(rel)
				if lerr != nil {
					target = "?"
				}
				l.entries = append(l.entries, rel+" -> "+target)
			case isDir:
				l.entries = append(l.entries, rel+"/")
				queue = append(queue, dir{rel: rel, parent: rules})
			default:
				l.entries = append(l.entries, rel)
			}
		}
	}
	return l, nil
}

// ignoredNames names the first ignored entries in tree order.
func ignoredNames(names []string) string {
	names = slices.Sorted(slices.Values(names))
	if len(names) <= ListMaxIgnoredNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:ListMaxIgnoredNames], ", "), len(names)-ListMaxIgnoredNames)
}
