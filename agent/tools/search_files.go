package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Search bounds: enough matches to act on, few enough to fit the context.
const (
	// SearchMaxMatches is the most matching lines reported per call.
	SearchMaxMatches = 200
	// SearchMaxLineRunes is how much of a matching line is shown.
	SearchMaxLineRunes = 300
	// SearchMaxLineBytes is how much of each line is searched; the rest of
	// a longer line (minified code, data) is ignored.
	SearchMaxLineBytes = 64 * 1024
	// SearchMaxFileBytes skips larger files (logs, data dumps).
	SearchMaxFileBytes = 16 << 20
	// SearchMaxFiles bounds how many files one call reads.
	SearchMaxFiles = 20000
)

type searchFilesParams struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

type searchFilesTool struct{ w *Workspace }

func (searchFilesTool) Name() string { return "search_files" }

func (searchFilesTool) Description() string {
	return fmt.Sprintf("Search text files under a workspace directory (default: the root) for a Go (RE2) regular expression, line by line. "+
		"glob optionally filters files by base name (e.g. \"*.go\"). Binary files, symlinks and .git are skipped. "+
		"Output lines are 'path:line: text'; at most %d matches are returned.", SearchMaxMatches)
}

func (searchFilesTool) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Go RE2 regular expression, matched against each line."},
    "path": {"type": "string", "description": "Directory or file to search, relative to the workspace root. Default \".\"."},
    "glob": {"type": "string", "description": "Only search files whose base name matches this pattern, e.g. \"*.go\"."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)
}

// searchState accumulates one search's results and its bounds.
type searchState struct {
	out       strings.Builder
	outRunes  int
	matches   int
	files     int
	skipped   int // binary, too large or unreadable files
	stopNote  string
	outputCap int
}

// errSearchDone ends the walk early once a bound is reached.
var errSearchDone = errors.New("search bound reached")

func (t searchFilesTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var p searchFilesParams
	if err := decodeArgs(t.Name(), args, &p); err != nil {
		return failf("%v", err), nil
	}
	if p.Pattern == "" {
		return failf("invalid arguments for search_files: missing required argument \"pattern\""), nil
	}
	re, err := regexp.Compile(p.Pattern)
	if err != nil {
		return failf("search_files: invalid regular expression: %v", err), nil
	}
	if strings.Contains(p.Glob, "/") {
		return failf("search_files: glob %q is matched against base names only and must not contain '/'; use path to choose a directory", p.Glob), nil
	}
	if _, err := filepath.Match(p.Glob, ""); err != nil {
		return failf("search_files: invalid glob %q: %v", p.Glob, err), nil
	}
	if p.Path == "" {
		p.Path = "."
	}
	start, err := resolvePath(p.Path)
	if err != nil {
		return failf("search_files: %v", err), nil
	}
	fsys := t.w.root.FS()
	if _, err := fs.Stat(fsys, start); err != nil {
		return failf("search_files: %s", describePathError(p.Path, err)), nil
	}

	st := &searchState{outputCap: t.w.limits.OutputCap}
	walkErr := fs.WalkDir(fsys, start, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if name == start {
				return err
			}
			st.skipped++ // unreadable entry: keep searching the rest
			return nil
		}
		if d.IsDir() {
			if name != start && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		// WalkDir reports symlinks as such and never follows them; regular
		// files only, so devices and FIFOs cannot block the search.
		if !d.Type().IsRegular() {
			return nil
		}
		if p.Glob != "" {
			if ok, _ := filepath.Match(p.Glob, d.Name()); !ok {
				return nil
			}
		}
		if st.files == SearchMaxFiles {
			st.stopNote = fmt.Sprintf("[stopped after reading %d files; narrow path or glob]", SearchMaxFiles)
			return errSearchDone
		}
		st.files++
		return searchFile(fsys, name, re, st)
	})
	switch {
	case walkErr == nil, errors.Is(walkErr, errSearchDone):
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	default:
		return failf("search_files: %s", describePathError(p.Path, walkErr)), nil
	}

	if st.matches == 0 {
		msg := fmt.Sprintf("no matches (searched %d files; skipped %d binary, large or unreadable ones)", st.files, st.skipped)
		if st.stopNote != "" {
			msg += "\n" + st.stopNote
		}
		return Result{Output: msg}, nil
	}
	if st.stopNote != "" {
		st.out.WriteString(st.stopNote)
		st.out.WriteByte('\n')
	}
	return Result{Output: st.out.String()}, nil
}

// searchFile appends the matches of re in one file to st. Problems with the
// file itself are counted as skipped, not reported as failures.
func searchFile(fsys fs.FS, name string, re *regexp.Regexp, st *searchState) error {
	f, err := fsys.Open(name)
	if err != nil {
		st.skipped++
		return nil
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || info.Size() > SearchMaxFileBytes {
		st.skipped++
		return nil
	}
	br := bufio.NewReaderSize(f, 64*1024)
	prefix, perr := br.Peek(BinarySniffBytes)
	if len(prefix) == 0 {
		return nil // empty: nothing to match
	}
	if looksBinary(prefix, perr != nil) {
		st.skipped++
		return nil
	}
	for lineNo := 1; ; lineNo++ {
		line, _, err := readLine(br, SearchMaxLineBytes)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			st.skipped++
			return nil
		}
		if !re.Match(line) {
			continue
		}
		text := truncateRunes(strings.ToValidUTF8(string(line), "\uFFFD"), SearchMaxLineRunes)
		entry := fmt.Sprintf("%s:%d: %s\n", name, lineNo, text)
		n := utf8.RuneCountInString(entry)
		if st.outRunes+n > st.outputCap {
			st.stopNote = fmt.Sprintf("[stopped at the %d-character output cap after %d matches; narrow the pattern, path or glob]", st.outputCap, st.matches)
			return errSearchDone
		}
		st.out.WriteString(entry)
		st.outRunes += n
		st.matches++
		if st.matches == SearchMaxMatches {
			st.stopNote = fmt.Sprintf("[reached the limit of %d matches; there may be more: narrow the pattern, path or glob]", SearchMaxMatches)
			return errSearchDone
		}
	}
}
