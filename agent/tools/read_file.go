package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// ReadMaxLineRunes is the most code points of one line read_file shows;
// the rest of a longer line (minified code, data) is cut with a marker.
const ReadMaxLineRunes = 2000

// lineCutMarker ends a line that read_file cut.
func lineCutMarker() string {
	return fmt.Sprintf(" [... line cut at %d characters]", ReadMaxLineRunes)
}

type readFileParams struct {
	Path   string `json:"path" description:"File path relative to the workspace root."`
	Offset int    `json:"offset,omitempty" description:"Number of the first line to show, 1-based. Default 1."`
	Limit  int    `json:"limit,omitempty" description:"How many lines to show at most. Default: the limit in the tool description."`
}

type readFileTool struct {
	spec[readFileParams]
	w *Workspace
}

func (t readFileTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
		return failf("%v", err), nil
	}
	rel, err := resolvePath(p.Path)
	if err != nil {
		return failf("read_file: %v", err), nil
	}
	if p.Offset < 0 || p.Limit < 0 {
		return failf("read_file: offset and limit must be positive"), nil
	}
	offset := max(p.Offset, 1) // 0 is taken as "from the start"
	limit := p.Limit
	if limit == 0 {
		limit = t.w.limits.ReadLineLimit
	}

	// Never a FIFO, socket or device: opening one could block the round.
	f, info, err := t.w.openRegular(rel)
	switch {
	case info != nil && info.IsDir():
		return failf("read_file: %s is a directory; use list_files", p.Path), nil
	case errors.Is(err, errNotRegular):
		return failf("read_file: %s is not a regular file (a FIFO, socket or device is never read)", p.Path), nil
	case err != nil:
		return failf("read_file: %s", describePathError(p.Path, err)), nil
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64*1024)
	prefix, perr := br.Peek(BinarySniffBytes)
	if perr != nil && !errors.Is(perr, io.EOF) && !errors.Is(perr, bufio.ErrBufferFull) {
		return failf("read_file: %s", describePathError(p.Path, perr)), nil
	}
	if looksBinary(prefix, perr != nil) {
		return failf("read_file: %s looks like a binary file (NUL byte or invalid UTF-8); it cannot be shown as text", p.Path), nil
	}
	return t.render(ctx, br, p.Path, offset, limit)
}

// render formats lines [offset, offset+limit) of br within the byte cap.
func (t readFileTool) render(ctx context.Context, br *bufio.Reader, name string, offset, limit int) (Result, error) {
	byteCap := t.w.limits.ReadByteLimit
	var out strings.Builder
	lineNo := 0
	shown := 0
	var stopNote string
	for {
		if lineNo%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return Result{}, err
			}
		}
		keep := 0 // lines before offset are read and dropped
		if lineNo+1 >= offset {
			keep = ReadMaxLineRunes * utf8.UTFMax
		}
		line, cut, err := readLine(br, keep)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return failf("read_file: %s", describePathError(name, err)), nil
		}
		lineNo++
		if lineNo < offset {
			continue
		}
		if shown == limit {
			stopNote = fmt.Sprintf("[showed lines %d-%d; more lines remain: continue with offset %d]", offset, lineNo-1, lineNo)
			break
		}
		if cut {
			line = trimPartialRune(line)
		}
		if !utf8.Valid(line) {
			return failf("read_file: %s contains invalid UTF-8 at line %d; it looks like a binary file and cannot be shown as text", name, lineNo), nil
		}
		text := string(line)
		if cut || utf8.RuneCount(line) > ReadMaxLineRunes {
			text = runes.Prefix(text, ReadMaxLineRunes) + lineCutMarker()
		}
		entry := fmt.Sprintf("%6d\t%s\n", lineNo, text)
		if out.Len()+len(entry) > byteCap {
			if shown > 0 {
				stopNote = fmt.Sprintf("[stopped at the %d-byte read cap after lines %d-%d; more lines remain: continue with offset %d]", byteCap, offset, lineNo-1, lineNo)
				break
			}
			// A single line larger than the cap: show what fits of it.
			out.Write(trimPartialRune([]byte(entry[:byteCap])))
			stopNote = fmt.Sprintf("\n[line %d is longer than the %d-byte read cap and was cut]", lineNo, byteCap)
			if _, err := br.Peek(1); err == nil {
				stopNote = strings.TrimSuffix(stopNote, "]") + fmt.Sprintf("; more lines remain: continue with offset %d]", lineNo+1)
			}
			shown++
			break
		}
		out.WriteString(entry)
		shown++
	}
	if shown == 0 && stopNote == "" {
		if lineNo == 0 {
			return Result{Output: fmt.Sprintf("%s is empty", name)}, nil
		}
		return failf("read_file: offset %d is past the end of %s, which has %d lines", offset, name, lineNo), nil
	}
	if stopNote != "" {
		// Limit and cap notes are only set once the next line has been read,
		// so "more lines remain" is always true.
		out.WriteString(stopNote)
		out.WriteByte('\n')
	}
	return Result{Output: out.String()}, nil
}
