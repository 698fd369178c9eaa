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

func (t editFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
		return failf("%v", err), nil
	}
	switch {
	case p.OldString == nil:
		return failf("invalid arguments for edit_file: missing required argument \"old_string\""), nil
	case p.NewString == nil:
		return failf("invalid arguments for edit_file: missing required argument \"new_string\""), nil
	case *p.OldString == "":
		return failf("edit_file: old_string must not be empty; use write_file to create a file"), nil
	case *p.OldString == *p.NewString:
		return failf("edit_file: old_string and new_string are identical; nothing to change"), nil
	}
	rel, err := resolvePath(p.Path)
	if err != nil {
		return failf("edit_file: %v", err), nil
	}
	if res, ok := t.w.checkWritable("edit_file", p.Path, rel); !ok {
		return res, nil
	}
	if err := t.w.checkGitWrite(rel); err != nil {
		return failf("edit_file: cannot edit %s: %v", p.Path, err), nil
	}
	if _, err := t.w.root.Stat(rel); err != nil {
		return failf("edit_file: %s", describePathError(p.Path, err)), nil
	}
	target, err := t.w.resolveWriteTarget(rel)
	if err == nil {
		err = t.w.checkGitWrite(target.rel)
	}
	if err != nil {
		return failf("edit_file: cannot edit %s: %v", p.Path, err), nil
	}
	if res, ok := t.w.checkWritable("edit_file", p.Path, target.rel); !ok {
		return res, nil
	}
	if target.info == nil { // removed since the Stat above
		return failf("edit_file: %s: no such file or directory", p.Path), nil
	}
	if size := target.info.Size(); size > EditMaxFileBytes {
		return failf("edit_file: %s is %d bytes, more than the %d-byte edit limit; use run_command to change it", p.Path, size, EditMaxFileBytes), nil
	}
	f, _, err := t.w.openRegular(target.rel)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(f)
		f.Close()
	}
	if err != nil {
		return failf("edit_file: %s", describePathError(p.Path, err)), nil
	}
	if looksBinary(data, true) {
		return failf("edit_file: %s looks like a binary file (NUL byte or invalid UTF-8); refusing to edit it", p.Path), nil
	}
	content := string(data)
	old, repl := *p.OldString, *p.NewString
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return failf("edit_file: old_string not found in %s (0 matches); it must match the file exactly, including whitespace and indentation; re-read the file and retry", p.Path), nil
	case n > 1 && !p.ReplaceAll:
		return failf("edit_file: old_string occurs %d times in %s (%d matches); add surrounding context to make it unique, or set replace_all to replace every occurrence", n, p.Path, n), nil
	}
	firstLine := strings.Count(content[:strings.Index(content, old)], "\n") + 1
	updated := strings.Replace(content, old, repl, -1)
	if !utf8.ValidString(updated) {
		// Only possible if new_string itself was invalid; keep files text.
		return failf("edit_file: new_string is not valid UTF-8"), nil
	}
	if err := t.w.replaceFile(target, []byte(updated)); err != nil {
		return failf("edit_file: cannot write %s: %v", p.Path, err), nil
	}
	return Result{Output: fmt.Sprintf("edited %s: replaced %d occurrence(s), first at line %d", rel, n, firstLine)}, nil
}
