package tools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// BinarySniffBytes is how much of a file is inspected to decide whether it is
// binary (a NUL byte or invalid UTF-8 in this prefix).
const BinarySniffBytes = 8 * 1024

// failf builds an ordinary tool failure for the model.
func failf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), Failed: true}
}

// decodeArgs decodes the model's JSON arguments into dst strictly: unknown
// fields and trailing data are rejected so that a misspelled argument is not
// silently ignored. The returned error text is meant for the model.
func decodeArgs(tool string, args json.RawMessage, dst any) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		// Some providers send "" for a call without arguments.
		trimmed = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("invalid arguments for %s: %s", tool, describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("invalid arguments for %s: unexpected data after the JSON object", tool)
	}
	return nil
}

// describeJSONError rewords decoding errors in terms of argument names rather
// than Go types, which mean nothing to the model.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return fmt.Sprintf("arguments must be a JSON object, got %s", typeErr.Value)
		}
		return fmt.Sprintf("argument %q must be of type %s, got %s", typeErr.Field, jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "arguments are not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	msg := err.Error()
	if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("unknown argument %s", field)
	}
	return strings.TrimPrefix(msg, "json: ")
}

// jsonTypeName maps Go kinds to JSON Schema type names.
func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "int32":
		return "integer"
	case "float64", "float32":
		return "number"
	default:
		return kind
	}
}

// resolvePath turns a model-supplied path into a clean, slash-separated path
// relative to the workspace root. The lexical checks only produce clearer
// messages; os.Root enforces confinement (including symlinks) regardless.
func resolvePath(p string) (string, error) {
	if p == "" {
		return "", errors.New("path must not be empty")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("path %q is absolute; use a path relative to the workspace root", p)
	}
	c := filepath.ToSlash(filepath.Clean(filepath.FromSlash(p)))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q leads outside the workspace", p)
	}
	return c, nil
}

// describePathError explains a filesystem error about path p to the model.
func describePathError(p string, err error) string {
	return p + ": " + errReason(err)
}

// errReason words a filesystem error without Go's syscall jargon.
func errReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root's escape error is unexported; match its text.
		return "path leads outside the workspace (through \"..\" or a symlink)"
	case strings.Contains(err.Error(), "not a directory"):
		return "a path component is not a directory"
	default:
		// The path in a PathError is the workspace's absolute one, which
		// the model never gave and does not need.
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			return pathErr.Err.Error()
		}
		var linkErr *os.LinkError
		if errors.As(err, &linkErr) {
			return linkErr.Err.Error()
		}
		return err.Error()
	}
}

// looksBinary reports whether prefix (the first bytes of a file) indicates
// binary content. atEOF tells whether prefix is the whole file; if not, an
// incomplete UTF-8 sequence at its end is not held against it.
func looksBinary(prefix []byte, atEOF bool) bool {
	if bytes.IndexByte(prefix, 0) >= 0 {
		return true
	}
	if !atEOF {
		prefix = trimPartialRune(prefix)
	}
	return !utf8.Valid(prefix)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b, which
// appears whenever a byte limit cuts through a multi-byte character.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing partial after it
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// readLine reads one line without its trailing "\n", keeping at most limit
// bytes; the rest of an over-long line is consumed and dropped (cut is true),
// so memory stays bounded on files with enormous lines. It returns io.EOF only
// when no bytes at all were left.
func readLine(br *bufio.Reader, limit int) (line []byte, cut bool, err error) {
	consumed := false
	for {
		frag, rerr := br.ReadSlice('\n')
		if len(frag) > 0 {
			consumed = true
		}
		if rerr == nil {
			frag = frag[:len(frag)-1] // the newline
		}
		if room := limit - len(line); room >= len(frag) {
			line = append(line, frag...)
		} else {
			if room > 0 {
				line = append(line, frag[:room]...)
			}
			cut = true
		}
		switch {
		case rerr == nil:
			return line, cut, nil
		case errors.Is(rerr, bufio.ErrBufferFull):
			continue
		case errors.Is(rerr, io.EOF):
			if !consumed {
				return nil, false, io.EOF
			}
			return line, cut, nil
		default:
			return nil, false, rerr
		}
	}
}

// truncateRunes shortens s to at most n code points, marking the cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return runes.Prefix(s, n) + " [...]"
}

// errNotRegular refuses a FIFO, socket or device node: opening one can
// block (a FIFO without a writer) or act (a device), so it is never read.
var errNotRegular = errors.New("not a regular file (a FIFO, socket or device is never opened)")

// openRegular opens the regular file rel for reading, or refuses it with
// errNotRegular without reading it (a directory is refused with its own
// info, for a clearer message). It looks before it opens, and the open
// itself cannot block: O_NONBLOCK, then fstat on what was opened, which
// catches a swap between the look and the open.
func (w *Workspace) openRegular(rel string) (*os.File, fs.FileInfo, error) {
	info, err := w.root.Stat(rel)
	if err != nil {
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, info, errNotRegular
	}
	f, err := w.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if info, err = f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errNotRegular
		}
		return nil, info, err
	}
	return f, info, nil
}
