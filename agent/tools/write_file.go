package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// NewFilePerm and NewDirPerm are used for files and directories write_file
// creates; existing files keep their mode.
const (
	NewFilePerm fs.FileMode = 0o644
	NewDirPerm  fs.FileMode = 0o755
)

type writeFileParams struct {
	Path    string  `json:"path"`
	Content *string `json:"content"` // pointer: "" is valid content, absence is not
}

type writeFileTool struct{ w *Workspace }

func (writeFileTool) Name() string { return "write_file" }

func (writeFileTool) Description() string {
	return "Write a file in the workspace, replacing it entirely if it exists. Missing parent directories are created. " +
		"Prefer edit_file for changing part of an existing file."
}

func (writeFileTool) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace root."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`)
}

func (t writeFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var p writeFileParams
	if err := decodeArgs(t.Name(), args, &p); err != nil {
		return failf("%v", err), nil
	}
	if p.Content == nil {
		return failf("invalid arguments for write_file: missing required argument \"content\""), nil
	}
	rel, err := resolvePath(p.Path)
	if err != nil {
		return failf("write_file: %v", err), nil
	}
	if rel == "." {
		return failf("write_file: %s is the workspace root, not a file", p.Path), nil
	}
	existed := true
	info, err := t.w.root.Stat(rel)
	switch {
	case err == nil && info.IsDir():
		return failf("write_file: %s is a directory", p.Path), nil
	case err == nil && !info.Mode().IsRegular():
		return failf("write_file: %s is not a regular file", p.Path), nil // a FIFO would block
	case errors.Is(err, fs.ErrNotExist):
		existed = false
	}
	if dir := path.Dir(rel); dir != "." {
		if err := t.w.root.MkdirAll(dir, NewDirPerm); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return failf("write_file: cannot create %s: a parent path is a file, not a directory", p.Path), nil
			}
			return failf("write_file: creating parent directories: %s", describePathError(dir, err)), nil
		}
	}
	if err := t.w.root.WriteFile(rel, []byte(*p.Content), NewFilePerm); err != nil {
		return failf("write_file: %s", describePathError(p.Path, err)), nil
	}
	verb := "created"
	if existed {
		verb = "overwrote"
	}
	lines := strings.Count(*p.Content, "\n")
	if *p.Content != "" && !strings.HasSuffix(*p.Content, "\n") {
		lines++
	}
	return Result{Output: fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, rel, len(*p.Content), lines)}, nil
}
