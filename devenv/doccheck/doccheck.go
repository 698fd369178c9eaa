// Package doccheck keeps the documentation a newcomer reads honest: README.md
// stays short, and every link in README.md, CONTRIBUTING.md and docs/ leads to
// a file (and heading) inside the repository. The contract a user needs lives
// in docs/, so nothing may point beside the checkout (../shared/SPEC.md) or to
// a page that moved.
package doccheck

import (
	"fmt"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// MaxREADMELines is the most README.md may have: what it is, the two
// commands, the data flow, triggering, security in short, and the docs index.
const MaxREADMELines = 200

// Pages returns the checked Markdown files of the repository at root,
// relative to it: README.md, CONTRIBUTING.md and every .md under docs/.
func Pages(root string) ([]string, error) {
	pages := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(pages[2:])
	return pages, err
}

// Check returns one message per problem in the pages (paths relative to
// root): README.md over MaxREADMELines, a page that is missing, and every
// broken or outside link.
func Check(root string, pages []string) []string {
	var bad []string
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", page, err))
			continue
		}
		text := string(data)
		if page == "README.md" {
			if n := strings.Count(text, "\n"); n > MaxREADMELines {
				bad = append(bad, fmt.Sprintf("README.md: %d lines, at most %d (move the rest into docs/)", n, MaxREADMELines))
			}
		}
		for _, l := range Links(text) {
			if msg := checkLink(root, page, l.Target); msg != "" {
				bad = append(bad, fmt.Sprintf("%s:%d: link %q %s", page, l.Line, l.Target, msg))
			}
		}
	}
	return bad
}

// Link is one link target of a page and the line it is on.
type Link struct {
	Target string
	Line   int
}

var (
	inlineLink = regexp.MustCompile(`\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	autoLink   = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]+)>`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
)

// Links returns the link targets of a Markdown text: inline links, images,
// autolinks and reference definitions, outside fenced code blocks and code
// spans (where brackets are code, not links).
func Links(text string) []Link {
	var links []Link
	for n, line := range unfenced(text) {
		if strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t") {
			continue // an indented code block line
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inlineLink, autoLink, refDef} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				links = append(links, Link{Target: m[1], Line: n})
			}
		}
	}
	return links
}

// unfenced yields the lines of a Markdown text outside fenced code blocks
// (``` or ~~~, fence lines included), each with its 1-based line number: the
// one place both the link scan and the heading scan learn what is code.
func unfenced(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fence := ""
		for i, line := range strings.Split(text, "\n") {
			trimmed := strings.TrimSpace(line)
			if fence != "" {
				if strings.HasPrefix(trimmed, fence) {
					fence = ""
				}
				continue
			}
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				continue
			}
			if !yield(i+1, line) {
				return
			}
		}
	}
}

// checkLink says what is wrong with one target of page, or "".
func checkLink(root, page, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return "does not parse: " + err.Error()
	}
	if u.Scheme != "" || u.Host != "" {
		// The only addresses allowed are the local servers a reader starts
		// (the Temporal UI, Grafana, ...): they are not documents.
		if (u.Scheme == "http" || u.Scheme == "https") && isLoopback(u.Hostname()) {
			return ""
		}
		return "points outside the repository (put what the reader needs in docs/)"
	}
	if strings.HasPrefix(u.Path, "/") {
		return "is an absolute path (use a path relative to the page)"
	}
	file := filepath.Join(filepath.Dir(filepath.Join(root, filepath.FromSlash(page))), filepath.FromSlash(u.Path))
	if u.Path == "" {
		file = filepath.Join(root, filepath.FromSlash(page))
	}
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "points outside the repository (put what the reader needs in docs/)"
	}
	info, err := os.Stat(file)
	if err != nil {
		return "names a file that does not exist"
	}
	if u.Fragment == "" || info.IsDir() || !strings.HasSuffix(file, ".md") {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !Anchors(string(data))[u.Fragment] {
		return fmt.Sprintf("names a heading #%s that %s does not have", u.Fragment, filepath.ToSlash(rel))
	}
	return ""
}

func isLoopback(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// Anchors returns the heading anchors of a Markdown text as GitHub makes
// them: lower case, punctuation dropped, spaces as hyphens, "-1", "-2", ...
// for repeats.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range unfenced(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}
