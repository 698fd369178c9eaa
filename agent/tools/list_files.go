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

type listFilesParams struct {
	Path string `json:"path"`
}

type listFilesTool struct{ w *Workspace }

func (listFilesTool) Name() string { return "list_files" }

func (t listFilesTool) Description() string {
	return fmt.Sprintf("List a workspace directory recursively (default: the workspace root). "+
		"Paths are relative to the workspace root; directories end with '/', symlinks are shown as 'link -> target' and not followed. "+
		".git is listed but not entered. At most %d entries are returned, shallow levels first; list a subdirectory to see more.", ListMaxEntries)
}

func (listFilesTool) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the workspace root. Default \".\"."}
  },
  "required": [],
  "additionalProperties": false
}`)
}

func (t listFilesTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var p listFilesParams
	if err := decodeArgs(t.Name(), args, &p); err != nil {
		return failf("%v", err), nil
	}
	if p.Path == "" {
		p.Path = "."
	}
	start, err := resolvePath(p.Path)
	if err != nil {
		return failf("list_files: %v", err), nil
	}
	fsys := t.w.root.FS()
	info, err := fs.Stat(fsys, start)
	if err != nil {
		return failf("list_files: %s", describePathError(p.Path, err)), nil
	}
	if !info.IsDir() {
		return failf("list_files: %s is a file, not a directory; use read_file", p.Path), nil
	}

	entries, truncated, err := t.collect(ctx, start)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, err
		}
		return failf("list_files: %s", describePathError(p.Path, err)), nil
	}
	if len(entries) == 0 {
		return Result{Output: fmt.Sprintf("%s is an empty directory", p.Path)}, nil
	}
	// Breadth-first collection keeps the shallow levels when truncating;
	// sorting afterwards restores a readable tree order.
	slices.Sort(entries)
	var b strings.Builder
	runes := 0
	for i, e := range entries {
		if runes+utf8.RuneCountInString(e)+1 > t.w.limits.OutputCap {
			fmt.Fprintf(&b, "[listing cut at the %d-character output cap after %d of %d entries; list a subdirectory to see more]\n", t.w.limits.OutputCap, i, len(entries))
			return Result{Output: b.String()}, nil
		}
		b.WriteString(e)
		b.WriteByte('\n')
		runes += utf8.RuneCountInString(e) + 1
	}
	if truncated {
		fmt.Fprintf(&b, "[listing stopped at %d entries; deeper entries are omitted, list a subdirectory to see more]\n", ListMaxEntries)
	}
	return Result{Output: b.String()}, nil
}

// collect walks the tree under start breadth-first without following
// symlinks, returning at most ListMaxEntries display lines. An error is
// either ctx's or the failure to read start itself.
func (t listFilesTool) collect(ctx context.Context, start string) (entries []string, truncated bool, err error) {
	fsys := t.w.root.FS()
	queue := []string{start}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		dir := queue[0]
		queue = queue[1:]
		des, rerr := fs.ReadDir(fsys, dir)
		if rerr != nil {
			if dir == start {
				return nil, false, rerr
			}
			// An unreadable subdirectory is noted, not fatal for the listing.
			entries = append(entries, fmt.Sprintf("%s/* (unreadable: %s)", dir, errReason(rerr)))
			continue
		}
		for _, de := range des {
			if len(entries) >= ListMaxEntries {
				return entries, true, nil
			}
			rel := path.Join(dir, de.Name())
			switch {
			case de.Type()&fs.ModeSymlink != 0:
				target, lerr := t.w.root.Readlink(rel)
				if lerr != nil {
					target = "?"
				}
				entries = append(entries, rel+" -> "+target)
			case de.IsDir():
				entries = append(entries, rel+"/")
				if !skipDir(de.Name()) {
					queue = append(queue, rel)
				}
			default:
				entries = append(entries, rel)
			}
		}
	}
	return entries, false, nil
}
