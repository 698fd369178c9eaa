package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// EditMaxFileBytes bounds the file size edit_file loads into memory; text
// files an agent edits by string replacement are far smaller.
const EditMaxFileBytes = 16 << 20

type editFileParams struct {
	Path       string  `json:"path" description:"File path relative to the workspace root."`
	OldString  *string `json:"old_string" description:"Exact text to replace, without read_file's line-number prefixes."` // pointers: distinguish "" from absent
	NewString  *string `json:"new_string" description:"Replacement text; empty deletes old_string."`
	ReplaceAll bool    `json:"replace_all,omitempty" description:"Replace every occurrence instead of requiring exactly one. Default false."`
}

type editFileTool struct {
	spec[editFileParams]
	w *Workspace
}

// Run edits in steps: check the arguments, find the file the path leads
// to, load it, replace, write. A refusal at any step (the false of a
// (Result, bool) pair) is the answer the model gets.
func (t editFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
		return failf("%v", err), nil
	}
	if res, ok := p.check(); !ok {
		return res, nil
	}
	rel, target, res, ok := t.find(p.Path)
	if !ok {
		return res, nil
	}
	content, res, ok := t.load(p.Path, target)
	if !ok {
		return res, nil
	}
	e, res, ok := replaceIn(content, p)
	if !ok {
		return res, nil
	}
	if err := t.w.replaceFile(target, []byte(e.updated)); err != nil {
		return failf("edit_file: cannot write %s: %v", p.Path, err), nil
	}
	return Result{Output: fmt.Sprintf("edited %s: replaced %d occurrence(s), first at line %d", rel, e.count, e.firstLine)}, nil
}

// check refuses arguments that cannot make an edit.
func (p editFileParams) check() (Result, bool) {
	switch {
	case p.OldString == nil:
		return failf("invalid arguments for edit_file: missing required argument \"old_string\""), false
	case p.NewString == nil:
		return failf("invalid arguments for edit_file: missing required argument \"new_string\""), false
	case *p.OldString == "":
		return failf("edit_file: old_string must not be empty; use write_file to create a file"), false
	case *p.OldString == *p.NewString:
		return failf("edit_file: old_string and new_string are identical; nothing to change"), false
	}
	return Result{}, true
}

// find resolves path to the existing file an edit replaces, through its
// symlinks, refusing protected paths and git's own files on the way.
func (t editFileTool) find(path string) (string, writeTarget, Result, bool) {
	rel, err := resolvePath(path)
	if err != nil {
		return "", writeTarget{}, failf("edit_file: %v", err), false
	}
	if res, ok := t.w.checkWritable("edit_file", path, rel); !ok {
		return "", writeTarget{}, res, false
	}
	if err := t.w.checkGitWrite(rel); err != nil {
		return "", writeTarget{}, failf("edit_file: cannot edit %s: %v", path, err), false
	}
	if _, err := t.w.root.Stat(rel); err != nil {
		return "", writeTarget{}, failf("edit_file: %s", describePathError(path, err)), false
	}
	target, err := t.w.resolveWriteTarget(rel)
	if err == nil {
		err = t.w.checkGitWrite(target.rel)
	}
	if err != nil {
		return "", writeTarget{}, failf("edit_file: cannot edit %s: %v", path, err), false
	}
	if res, ok := t.w.checkWritable("edit_file", path, target.rel); !ok {
		return "", writeTarget{}, res, false
	}
	if target.info == nil { // removed since the Stat above
		return "", writeTarget{}, failf("edit_file: %s: no such file or directory", path), false
	}
	return rel, target, Result{}, true
}

// load reads the target's text, refusing files over EditMaxFileBytes and
// binary ones.
func (t editFileTool) load(path string, target writeTarget) (string, Result, bool) {
	if size := target.info.Size(); size > EditMaxFileBytes {
		return "", failf("edit_file: %s is %d bytes, more than the %d-byte edit limit; use run_command to change it", path, size, EditMaxFileBytes), false
	}
	f, _, err := t.w.openRegular(target.rel)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(f)
		f.Close()
	}
	if err != nil {
		return "", failf("edit_file: %s", describePathError(path, err)), false
	}
	if looksBinary(data, true) {
		return "", failf("edit_file: %s looks like a binary file (NUL byte or invalid UTF-8); refusing to edit it", path), false
	}
	return string(data), Result{}, true
}

// edit is a replacement made: the new text, how many occurrences it
// replaced and the line of the first.
type edit struct {
	updated          string
	count, firstLine int
}

// replaceIn replaces old_string in content: exactly one occurrence, or
// every one with replace_all.
func replaceIn(content string, p editFileParams) (edit, Result, bool) {
	old, repl := *p.OldString, *p.NewString
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return edit{}, failf("edit_file: old_string not found in %s (0 matches); it must match the file exactly, including whitespace and indentation; re-read the file and retry", p.Path), false
	case n > 1 && !p.ReplaceAll:
		return edit{}, failf("edit_file: old_string occurs %d times in %s (%d matches); add surrounding context to make it unique, or set replace_all to replace every occurrence", n, p.Path, n), false
	}
	e := edit{updated: strings.Replace(content, old, repl, -1), count: n,
		firstLine: strings.Count(content[:strings.Index(content, old)], "\n") + 1}
	if !utf8.ValidString(e.updated) {
		// Only possible if new_string itself was invalid; keep files text.
		return edit{}, failf("edit_file: new_string is not valid UTF-8"), false
	}
	return e, Result{}, true
}
