package tools

import (
	"fmt"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ignoreFixture is a workspace whose ignore files exercise the gitignore
// rules (nested files, negation, anchoring, directory-only patterns,
// .git/info/exclude) beside a git-ignored node_modules/ of 3,000 files.
// Every file holds "needle", so searches see the same rules.
func ignoreFixture(t testing.TB) (*Workspace, string) {
	t.Helper()
	w, dir := newTestWorkspace(t, DefaultLimits())
	files := map[string]string{
		".gitignore":                   "# dependencies\nnode_modules/\n*.log\n!important.log\n/build\nlogs/\ndocs/**/tmp\n**/generated/\nthird_party/**\n",
		".git/info/exclude":            "private-notes.txt\n",
		"src/.gitignore":               "*.gen.go\n!keep.gen.go\n",
		"src/deep/.gitignore":          "/local-only.txt\r\n",
		"src/main.go":                  "",
		"src/util.go":                  "",
		"src/api.gen.go":               "",
		"src/keep.gen.go":              "",
		"src/deep/x.go":                "",
		"src/deep/local-only.txt":      "",
		"src/deep/more/local-only.txt": "",
		"trace.log":                    "",
		"important.log":                "",
		"build/out.bin.txt":            "",
		"docs/build/page.md":           "",
		"docs/a/b/tmp/scratch.md":      "",
		"docs/readme.md":               "",
		"logs/today.txt":               "",
		"src/logs":                     "", // a file: "logs/" only ignores directories
		"private-notes.txt":            "",
		"README.md":                    "",
		"src/deep/generated/types.go":  "",
		"generated":                    "", // a file: "**/generated/" only ignores directories
		"third_party/lib/a.c":          "",
	}
	for i := range 3000 {
		files[fmt.Sprintf("node_modules/pkg%02d/lib/file%04d.js", i%30, i)] = ""
	}
	for p, content := range files {
		if content == "" {
			content = "the needle in " + p + "\n"
		}
		writeTestFile(t, filepath.Join(dir, p), content)
	}
	return w, dir
}

// gitLines runs real git in dir and returns its output lines, sorted.
func gitLines(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	lines := strings.Split(testkit.Git(t, dir, args...), "\n")
	slices.Sort(lines)
	return lines
}

func TestListFilesHonoursGitignoreLikeGit(t *testing.T) {
	w, dir := ignoreFixture(t)
	testkit.Git(t, dir, "init", "-q") // .git exists already (info/exclude); init keeps it
	want := gitLines(t, dir, "ls-files", "--others", "--exclude-standard")

	out := mustOK(t, call(t, w, "list_files", `{}`))
	var files []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasSuffix(l, "/") && !strings.HasPrefix(l, "[") {
			files = append(files, l)
		}
	}
	slices.Sort(files)
	if !slices.Equal(files, want) {
		t.Fatalf("list_files shows files\n%v\ngit shows\n%v\nfull output:\n%s", files, want, out)
	}
	if strings.Contains(out, "node_modules/pkg") || strings.Contains(out, ".git/") {
		t.Fatalf("ignored or .git entries listed:\n%s", out)
	}
	// What was left out at the levels walked is named once each (a
	// directory, not its files), the first ListMaxIgnoredNames of them.
	last := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:]
	if !strings.HasPrefix(last, "[10 entries ignored by .gitignore were left out: build/, docs/a/b/tmp/, logs/, node_modules/, private-notes.txt, src/api.gen.go, src/deep/generated/, src/deep/local-only.txt, third_party/, trace.log;") {
		t.Fatalf("listing does not say what it left out:\n%s", out)
	}

	// An ignored directory named on purpose is listed.
	out = mustOK(t, call(t, w, "list_files", map[string]any{"path": "node_modules/pkg07"}))
	if !strings.Contains(out, "node_modules/pkg07/lib/file0007.js\n") || strings.Count(out, ".js\n") != 100 {
		t.Fatalf("explicit ignored directory:\n%s", out)
	}
	// A subdirectory still obeys the ignore files above it.
	out = mustOK(t, call(t, w, "list_files", map[string]any{"path": "src"}))
	if strings.Contains(out, "src/api.gen.go\n") || !strings.Contains(out, "src/keep.gen.go\n") || strings.Contains(out, "src/deep/local-only.txt\n") ||
		!strings.Contains(out, "src/deep/more/local-only.txt\n") {
		t.Fatalf("subdirectory listing ignores the rules above it:\n%s", out)
	}
}

func TestSearchFilesHonoursGitignoreLikeGit(t *testing.T) {
	w, dir := ignoreFixture(t)
	testkit.Git(t, dir, "init", "-q") // .git exists already (info/exclude); init keeps it
	want := gitLines(t, dir, "grep", "--untracked", "-l", "needle")

	out := mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle"}))
	var files []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		name, _, ok := strings.Cut(l, ":1: ")
		if !ok {
			t.Fatalf("unexpected line %q in\n%s", l, out)
		}
		files = append(files, name)
	}
	slices.Sort(files)
	if !slices.Equal(files, want) {
		t.Fatalf("search_files finds\n%v\ngit grep finds\n%v", files, want)
	}
	if !slices.Contains(files, "src/main.go") {
		t.Fatal("src/ results missing")
	}
	// The ignored tree named on purpose is searched.
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle", "path": "node_modules/pkg03"}))
	if strings.Count(out, ":1: the needle") != 100 {
		t.Fatalf("explicit ignored directory searched %d files:\n%s", strings.Count(out, ":1: "), out)
	}
	// So is an ignored file.
	out = mustOK(t, call(t, w, "search_files", map[string]any{"pattern": "needle", "path": "trace.log"}))
	if out != "trace.log:1: the needle in trace.log\n" {
		t.Fatalf("explicit ignored file: %q", out)
	}
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": "needle", "path": ".git"}), "run_command with git")
	mustFail(t, call(t, w, "search_files", map[string]any{"pattern": "needle", "path": ".git/info/exclude"}), "run_command with git")
}
