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
	Path    string  `json:"path" description:"File path relative to the workspace root."`
	Content *string `json:"content" description:"The complete new content of the file."` // pointer: "" is valid content, absence is not
}

type writeFileTool struct {
	spec[writeFileParams]
	w *Workspace
}

func (t writeFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
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
	if res, ok := t.w.checkWritable("write_file", p.Path, rel); !ok {
		return res, nil
	}
	if err := t.w.checkGitWrite(rel); err != nil {
		return failf("write_file: cannot write %s: %v", p.Path, err), nil
	}
	if dir := path.Dir(rel); dir != "." {
		if err := t.w.root.MkdirAll(dir, NewDirPerm); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return failf("write_file: cannot create %s: a parent path is a file, not a directory", p.Path), nil
			}
			return failf("write_file: creating parent directories: %s", describePathError(dir, err)), nil
		}
	}
	target, err := t.w.resolveWriteTarget(rel)
	if err == nil {
		err = t.w.checkGitWrite(target.rel)
	}
	if err != nil {
		return failf("write_file: cannot write %s: %v", p.Path, err), nil
	}
	if res, ok := t.w.checkWritable("write_file", p.Path, target.rel); !ok {
		return res, nil
	}
	if err := t.w.replaceFile(target, []byte(*p.Content)); err != nil {
		return failf("write_file: cannot write %s: %v", p.Path, err), nil
	}
	verb := "created"
	if target.info != nil {
		verb = "overwrote"
	}
	lines := strings.Count(*p.Content, "\n")
	if *p.Content != "" && !strings.HasSuffix(*p.Content, "\n") {
		lines++
	}
	return Result{Output: fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, rel, len(*p.Content), lines)}, nil
}
