package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Search bounds: enough matches to act on, few enough to fit the context.
const (
	// SearchMaxMatches is the most matching lines shown per call.
	SearchMaxMatches = 200
	// SearchMaxContext is the most context lines asked for on each side.
	SearchMaxContext = 10
	// SearchMaxLineRunes is how much of a shown line is shown.
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
	Pattern    string `json:"pattern" description:"Regular expression (Go RE2 syntax) matched against each line."`
	Path       string `json:"path,omitempty" description:"Directory or file to search, relative to the workspace root. Default: the workspace root."`
	Glob       string `json:"glob,omitempty" description:"Only search files whose base name matches this shell pattern, e.g. \"*.go\"."`
	IgnoreCase bool   `json:"ignore_case,omitempty" description:"Match regardless of letter case. Default false."`
	Context    int    `json:"context,omitempty" description:"Lines to show before and after each match. Default 0."`
}

type searchFilesTool struct {
	spec[searchFilesParams]
	w *Workspace
}

// errSearchDone ends the walk early once the file bound is reached.
var errSearchDone = errors.New("search bound reached")

func (t searchFilesTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
		return failf("%v", err), nil
	}
	if p.Pattern == "" {
		return failf("invalid arguments for search_files: missing required argument \"pattern\""), nil
	}
	expr := p.Pattern
	if p.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return failf("search_files: invalid regular expression: %v", err), nil
	}
	if p.Context < 0 || p.Context > SearchMaxContext {
		return failf("search_files: context must be between 0 and %d lines, got %d", SearchMaxContext, p.Context), nil
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
	info, err := fs.Stat(t.w.root.FS(), start)
	if err != nil {
		return failf("search_files: %s", describePathError(p.Path, err)), nil
	}

	s := &searcher{w: t.w, re: re, glob: p.Glob, out: newSearchOutput(t.w.limits.OutputCap, p.Context)}
	if info.IsDir() {
		rules, rerr := t.w.rulesAt(start)
		if rerr != nil {
			return failf("search_files: %v", rerr), nil
		}
		err = s.walk(ctx, start, rules)
	} else {
		// A file named on purpose is searched whatever the ignore files say.
		if inGitDir(start) {
			return failf("search_files: %v", errInGitDir), nil
		}
		err = s.file(start)
	}
	switch {
	case err == nil, errors.Is(err, errSearchDone):
	case ctx.Err() != nil:
		return Result{}, ctx.Err()
	default:
		return failf("search_files: %s", describePathError(p.Path, err)), nil
	}
	return Result{Output: s.render()}, nil
}

// searcher is one search's walk: which files it reads and what it found.
type searcher struct {
	w        *Workspace
	re       *regexp.Regexp
	glob     string
	out      *searchOutput
	files    int // files read
	skipped  int // binary, too large or unreadable files
	ignored  int // entries left out by .gitignore
	stopNote string
}

// walk searches dir depth-first in name order, so results come in path
// order. Entries the rules ignore are not entered; symlinks are not
// followed and only regular files are read, so a FIFO cannot block it.
func (s *searcher) walk(ctx context.Context, dir string, rules ignoreRules) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	des, err := fs.ReadDir(s.w.root.FS(), dir)
	if err != nil {
		return err
	}
	for _, de := range des {
		if de.Name() == GitDirName {
			continue // never searched, not even counted as ignored
		}
		rel := path.Join(dir, de.Name())
		if rules.ignored(rel, de.IsDir()) {
			s.ignored++
			continue
		}
		switch {
		case de.IsDir():
			if err := s.walk(ctx, rel, rules.enter(s.w, rel)); err != nil {
				if errors.Is(err, errSearchDone) || ctx.Err() != nil {
					return err
				}
				s.skipped++ // an unreadable subdirectory: search the rest
			}
		case de.Type().IsRegular():
			if s.glob != "" {
				if ok, _ := filepath.Match(s.glob, de.Name()); !ok {
					continue
				}
			}
			if s.files == SearchMaxFiles {
				s.stopNote = fmt.Sprintf("[stopped after reading %d files; narrow path or glob]", SearchMaxFiles)
				return errSearchDone
			}
			if err := s.file(rel); err != nil {
				return err
			}
		}
	}
	return nil
}

// file searches one file. Problems with the file itself are counted as
// skipped, not reported as failures.
func (s *searcher) file(name string) error {
	s.files++
	f, info, err := s.w.openRegular(name)
	if err != nil {
		s.skipped++
		return nil
	}
	defer f.Close()
	if info.Size() > SearchMaxFileBytes {
		s.skipped++
		return nil
	}
	br := bufio.NewReaderSize(f, 64*1024)
	prefix, perr := br.Peek(BinarySniffBytes)
	if len(prefix) == 0 {
		return nil // empty: nothing to match
	}
	if looksBinary(prefix, perr != nil) {
		s.skipped++
		return nil
	}
	s.out.startFile(name)
	for lineNo := 1; ; lineNo++ {
		line, _, err := readLine(br, SearchMaxLineBytes)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			s.skipped++
			return nil
		}
		s.out.line(lineNo, line, s.re.Match(line))
	}
}

// render is the model's view of the search: the shown lines, then what
// was left out.
func (s *searcher) render() string {
	o := s.out
	if o.total == 0 {
		msg := fmt.Sprintf("no matches (searched %d files; skipped %d binary, large or unreadable ones", s.files, s.skipped)
		if s.ignored > 0 {
			msg += fmt.Sprintf("; %d entries ignored by .gitignore were not searched", s.ignored)
		}
		msg += ")"
		if s.stopNote != "" {
			msg += "\n" + s.stopNote
		}
		return msg + "\n"
	}
	var b strings.Builder
	b.WriteString(o.text.String())
	if hidden := o.total - o.shown; hidden > 0 {
		why := fmt.Sprintf("the limit of %d matches", SearchMaxMatches)
		if o.capped {
			why = fmt.Sprintf("the %d-character output cap", o.outputCap)
		}
		atLeast := ""
		if s.stopNote != "" {
			atLeast = "at least "
		}
		fmt.Fprintf(&b, "[%s%d more matches not shown (showed %d of %s%d, stopped at %s); narrow the pattern, path or glob]\n",
			atLeast, hidden, o.shown, atLeast, o.total, why)
	}
	if s.stopNote != "" {
		b.WriteString(s.stopNote)
		b.WriteByte('\n')
	}
	return b.String()
}
