package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// EditMaxFileBytes bounds the file size edit_file loads into memory; text
// files an agent edits by string replacement are far smaller.
const EditMaxFileBytes = 16 << 20

type editFileParams struct {
	Path       string  `json:"path"`
	OldString  *string `json:"old_string"` // pointers: distinguish "" from absent
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

type editFileTool struct{ w *Workspace }

func (editFileTool) Name() string { return "edit_file" }

func (editFileTool) Description() string {
	return "Replace text in an existing workspace file. old_string must match the file exactly (including whitespace, " +
		"without read_file's line-number prefixes) and occur exactly once, unless replace_all is true, which replaces every occurrence. " +
		"Include enough surrounding context in old_string to make it unique."
}

func (editFileTool) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root."},
    "old_string": {"type": "string", "description": "Exact text to replace."},
    "new_string": {"type": "string", "description": "Replacement text."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one. Default false."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`)
}

func (t editFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var p editFileParams
	if err := decodeArgs(t.Name(), args, &p); err != nil {
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
	info, err := t.w.root.Stat(rel)
	if err != nil {
		return failf("edit_file: %s", describePathError(p.Path, err)), nil
	}
	if info.IsDir() {
		return failf("edit_file: %s is a directory", p.Path), nil
	}
	if !info.Mode().IsRegular() {
		return failf("edit_file: %s is not a regular file", p.Path), nil // a FIFO would block
	}
	if info.Size() > EditMaxFileBytes {
		return failf("edit_file: %s is %d bytes, more than the %d-byte edit limit; use run_command to change it", p.Path, info.Size(), EditMaxFileBytes), nil
	}
	data, err := t.w.root.ReadFile(rel)
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
	// WriteFile truncates in place, so the file keeps its mode and inode.
	if err := t.w.root.WriteFile(rel, []byte(updated), NewFilePerm); err != nil {
		return failf("edit_file: %s", describePathError(p.Path, err)), nil
	}
	return Result{Output: fmt.Sprintf("edited %s: replaced %d occurrence(s), first at line %d", rel, n, firstLine)}, nil
}
