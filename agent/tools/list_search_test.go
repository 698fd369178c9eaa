package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestListFiles(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	for _, p := range []string{"README.md", "cmd/main.go", "pkg/a/a.go", "pkg/a/a_test.go", ".git/HEAD", ".git/objects/ab/cdef"} {
		writeTestFile(t, filepath.Join(dir, p), "x\n")
	}
	out := mustOK(t, call(t, w, "list_files", `{}`))
	// .git is left out entirely, not even listed as a directory.
	want := "README.md\ncmd/\ncmd/main.go\npkg/\npkg/a/\npkg/a/a.go\npkg/a/a_test.go\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	out = mustOK(t, call(t, w, "list_files", map[string]any{"path": "pkg"}))
	if out != "pkg/a/\npkg/a/a.go\npkg/a/a_test.go\n" {
		t.Fatalf("subdirectory listing:\n%s", out)
	}
	// Naming .git does not list it either: git commands are for that.
	mustFail(t, call(t, w, "list_files", map[string]any{"path": ".git"}), "run_command with git")
	mustFail(t, call(t, w, "list_files", map[string]any{"path": ".git/objects"}), "left out")
	mustFail(t, call(t, w, "list_files", map[string]any{"path": "README.md"}), "not a directory")
	mustFail(t, call(t, w, "list_files", map[string]any{"path": "nope"}), "no such file")
}

func TestListFilesBounded(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	for i := range ListMaxEntries + 100 {
		writeTestFile(t, filepath.Join(dir, "deep/vendor", fmt.Sprintf("f%04d", i)), "")
	}
	writeTestFile(t, filepath.Join(dir, "zz_top.txt"), "")
	out := mustOK(t, call(t, w, "list_files", `{}`))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != ListMaxEntries+1 || !strings.Contains(lines[len(lines)-1], "listing stopped at 1000 entries") {
		t.Fatalf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	// Breadth first: shallow entries survive the truncation.
	if !strings.Contains(out, "\nzz_top.txt\n") || !strings.Contains(out, "deep/vendor/\n") {
		t.Fatal("shallow entries missing from a truncated listing")
	}
}

func TestListFilesEscapes(t *testing.T) {
	f := newEscapeFixture(t)
	for _, p := range []string{"../", "..", f.outsideRel, f.outside, "/", "outdir", "sub/reloutdir"} {
		res := call(t, f.w, "list_files", map[string]any{"path": p})
		if !res.Failed || strings.Contains(res.Output, "secret.txt") {
			t.Errorf("list_files(%q) = %+v, want refusal", p, res)
		}
	}
	// The root listing shows the links but does not follow them.
	out := mustOK(t, call(t, f.w, "list_files", `{}`))
	if !strings.Contains(out, "outdir -> "+f.outside+"\n") || !strings.Contains(out, "inlink -> inside.txt\n") {
		t.Fatalf("symlinks not shown:\n%s", out)
	}
	if strings.Contains(out, "outdir/") || strings.Contains(out, "reloutdir/") {
		t.Fatalf("listing followed a symlink out:\n%s", out)
	}
}

func TestSearchFiles(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, filepath.Join(dir, "src/a.go"), "package a\n\nvar needle = 1\nvar other = needle + 1\n")
	writeTestFile(t, filepath.Join(dir, "src/notes.txt"), "needle in text\n")
	writeTestFile(t, filepath.Join(dir, "docs/b.go"), "// a Needle, capitalised\n")
	writeTestFile(t, filepath.Join(dir, "img.bin"), "needle\x00binary\n")
	writeTestFile(t, filepath.Join(dir, ".git/config"), "needle in git\n")

	out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": `needle`}))
	want := "src/a.go:3: var needle = 1\nsrc/a.go:4: var other = needle + 1\nsrc/notes.txt:1: needle in text\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": `(?i)needle`, "glob": "*.go"}))
	want = "docs/b.go:1: // a Needle, capitalised\nsrc/a.go:3: var needle = 1\nsrc/a.go:4: var other = needle + 1\n"
	if out != want {
		t.Fatalf("with glob got\n%s\nwant\n%s", out, want)
	}
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": `needle \+`, "path": "src"}))
	if out != "src/a.go:4: var other = needle + 1\n" {
		t.Fatalf("with path got\n%s", out)
	}
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": `needle`, "path": "src/notes.txt"}))
	if out != "src/notes.txt:1: needle in text\n" {
		t.Fatalf("single file got\n%s", out)
	}
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": `haystack`}))
	if !strings.HasPrefix(out, "no matches") {
		t.Fatalf("no-match output %q", out)
	}
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": `(`}), "invalid regular expression")
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": `x`, "glob": "["}), "invalid glob")
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": `x`, "glob": "src/*.go"}), "base names")
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": `x`, "path": "nope"}), "no such file")
}

func TestSearchFilesBounded(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, filepath.Join(dir, "many.txt"), strings.Repeat("match me\n", 3*SearchMaxMatches))
	writeTestFile(t, filepath.Join(dir, "wide.txt"), "match "+strings.Repeat("w", 10*SearchMaxLineRunes)+"\n")
	out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "match", "glob": "many.txt"}))
	if n := strings.Count(out, "many.txt:"); n != SearchMaxMatches || !strings.Contains(out, "limit of 200 matches") {
		t.Fatalf("%d matches, tail %q", n, out[len(out)-120:])
	}
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "match", "glob": "wide.txt"}))
	if len(out) > SearchMaxLineRunes+50 || !strings.HasSuffix(out, "[...]\n") {
		t.Fatalf("wide line not shortened: %d bytes", len(out))
	}
}

func TestSearchFilesEscapes(t *testing.T) {
	f := newEscapeFixture(t)
	for _, p := range []string{"../", f.outsideRel, f.outside, "/", "outdir", "sub/reloutdir", "outfile", "reloutfile"} {
		res := call(t, f.w, "search_files", map[string]any{"pattern": "TOPSECRET", "path": p})
		if !res.Failed || strings.Contains(res.Output, secret) {
			t.Errorf("search_files(path %q) = %+v, want refusal", p, res)
		}
	}
	// Searching the root does not follow symlinks out.
	out := mustOK(t, call(t, f.w, "search_files", map[string]any{"pattern": "TOPSECRET"}))
	if !strings.HasPrefix(out, "no matches") {
		t.Fatalf("search followed a symlink out: %q", out)
	}
}
