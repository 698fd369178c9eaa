package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearchFilesIgnoreCase(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	writeTestFile(t, filepath.Join(dir, "a.txt"), "Needle\nneedle\nNEEDLE\nhay\n")
	out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle"}))
	if out != "a.txt:2: needle\n" {
		t.Fatalf("case-sensitive search: %q", out)
	}
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle", "ignore_case": true}))
	if out != "a.txt:1: Needle\na.txt:2: needle\na.txt:3: NEEDLE\n" {
		t.Fatalf("ignore_case search: %q", out)
	}
	// The flag applies to the whole pattern, alternatives included.
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "HAY|xyz", "ignore_case": true}))
	if out != "a.txt:4: hay\n" {
		t.Fatalf("ignore_case alternation: %q", out)
	}
}

func TestSearchFilesContext(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		word := "line"
		if i == 1 || i == 5 || i == 7 || i == 15 {
			word = "match"
		}
		fmt.Fprintf(&b, "%s %d\n", word, i)
	}
	writeTestFile(t, filepath.Join(dir, "a.txt"), b.String())
	writeTestFile(t, filepath.Join(dir, "b.txt"), "one\nmatch two\n")

	out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "match", "context": 2}))
	want := strings.Join([]string{
		"a.txt:1: match 1", // no lines before the first one
		"a.txt-2- line 2",
		"a.txt-3- line 3",
		"a.txt-4- line 4",
		"a.txt:5: match 5", // overlapping windows merge into one group
		"a.txt-6- line 6",
		"a.txt:7: match 7",
		"a.txt-8- line 8",
		"a.txt-9- line 9",
		"--",
		"a.txt-13- line 13",
		"a.txt-14- line 14",
		"a.txt:15: match 15",
		"a.txt-16- line 16",
		"a.txt-17- line 17",
		"--", // another file is another group
		"b.txt-1- one",
		"b.txt:2: match two", // no lines after the last one
	}, "\n") + "\n"
	if out != want {
		t.Fatalf("context 2:\n%s\nwant:\n%s", out, want)
	}
	// Without context there are no separators.
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "match"}))
	if strings.Contains(out, "--") || strings.Count(out, "\n") != 5 {
		t.Fatalf("no context:\n%s", out)
	}
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": "match", "context": SearchMaxContext + 1}), "between 0 and 10")
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": "match", "context": -1}), "between 0 and 10")
}

func TestSearchFilesCountsWhatItDoesNotShow(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	// 3 files of 150 matching lines: 450 matches, 200 shown.
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		writeTestFile(t, filepath.Join(dir, name), strings.Repeat("hit\n", 150))
	}
	out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "hit"}))
	if n := strings.Count(out, ": hit\n"); n != SearchMaxMatches {
		t.Fatalf("%d matches shown", n)
	}
	if !strings.HasSuffix(out, "[250 more matches not shown (showed 200 of 450, stopped at the limit of 200 matches); narrow the pattern, path or glob]\n") {
		t.Fatalf("tail: %q", out[len(out)-200:])
	}
	if strings.Contains(out, "c.txt") {
		t.Fatal("matches past the limit were shown")
	}

	// The output cap stops earlier and says so, with the same count.
	small, sdir := newTestWorkspace(t, Limits{OutputCap: 1000})
	writeTestFile(t, filepath.Join(sdir, "a.txt"), strings.Repeat("hit\n", 150))
	out = mustOK(t, call(t, small, "search_files", map[string]any{"pattern": "hit", "context": 1}))
	shown := strings.Count(out, ": hit\n")
	body, tail, _ := strings.Cut(out, "[")
	if len([]rune(body)) > 1000 || shown == 0 || shown >= 150 ||
		tail != fmt.Sprintf("%d more matches not shown (showed %d of 150, stopped at the 1000-character output cap); narrow the pattern, path or glob]\n", 150-shown, shown) {
		t.Fatalf("capped output (%d shown):\n%s", shown, out)
	}
}
