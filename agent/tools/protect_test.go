package tools

import (
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustProtected(t *testing.T, sets ...[]string) *Protected {
	t.Helper()
	p, err := ParseProtected(sets...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProtectedMatch(t *testing.T) {
	deployment := []string{"tests/**", "!tests/fixtures/**", "**/*_test.go", "/verify.sh", "ci/"}
	run := []string{"docs/*.md", "!docs/draft.md"}
	p := mustProtected(t, deployment, run)
	cases := []struct {
		path    string
		pattern string // "" = not protected
	}{
		{"tests/unit/a.py", "tests/**"},
		{"tests/fixtures/data.json", ""}, // negation re-allows
		{"pkg/deep/x_test.go", "**/*_test.go"},
		{"x_test.go", "**/*_test.go"},
		{"pkg/x.go", ""},
		{"verify.sh", "/verify.sh"},
		{"sub/verify.sh", ""}, // anchored
		{"ci/run.sh", "ci/"},  // inside a protected directory
		{"docs/readme.md", "docs/*.md"},
		{"docs/draft.md", ""},
	}
	for _, c := range cases {
		got, ok := p.Match(c.path, false)
		if ok != (c.pattern != "") || got != c.pattern {
			t.Errorf("Match(%q) = %q, %v; want %q", c.path, got, ok, c.pattern)
		}
	}
	// One set cannot re-allow what another protects.
	p = mustProtected(t, []string{"tests/**"}, []string{"!tests/**"})
	if _, ok := p.Match("tests/a.py", false); !ok {
		t.Error("a negation in the run's set re-allowed a path the deployment's set protects")
	}
	if p, _ := ParseProtected(nil, []string{}); p != nil {
		t.Error("no patterns should give a nil matcher")
	}
}

func TestCheckProtectedPattern(t *testing.T) {
	for _, bad := range []string{"", " tests", "tests ", "!", "/", "a\nb", "[z-a", strings.Repeat("é", 257)} {
		if CheckProtectedPattern(bad) == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
	for _, good := range []string{"tests/**", "!x", "**/*_test.go", strings.Repeat("é", 256)} {
		if err := CheckProtectedPattern(good); err != nil {
			t.Errorf("pattern %q refused: %v", good, err)
		}
	}
	if _, err := ParseProtected(make([]string, 65)); err == nil {
		t.Error("65 patterns accepted")
	}
}

func newProtectedWorkspace(t *testing.T, patterns []string, files map[string]string) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, files)
	w, err := OpenWorkspace(dir, DefaultLimits(), WithProtected(mustProtected(t, patterns)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

func TestFileToolsRefuseProtectedPaths(t *testing.T) {
	w, dir := newProtectedWorkspace(t, []string{"tests/**", "!tests/fixtures/**"}, map[string]string{
		"tests/a_test.py": "assert add(1, 2) == 3\n", "src/add.py": "def add(a, b): return a + b\n",
	})
	if err := os.Symlink("tests/a_test.py", filepath.Join(dir, "alias.py")); err != nil {
		t.Fatal(err)
	}
	refusals := []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": "tests/a_test.py", "content": "assert True\n"}},
		{"write_file", map[string]any{"path": "tests/new_test.py", "content": "assert True\n"}},
		{"write_file", map[string]any{"path": "./tests/../tests/a_test.py", "content": "x"}},
		{"write_file", map[string]any{"path": "alias.py", "content": "assert True\n"}}, // through a symlink
		{"edit_file", map[string]any{"path": "tests/a_test.py", "old_string": "== 3", "new_string": "== 3 or True"}},
		{"edit_file", map[string]any{"path": "alias.py", "old_string": "== 3", "new_string": "== 3 or True"}},
	}
	for _, r := range refusals {
		res := call(t, w, r.tool, r.args)
		want := `is protected (pattern "tests/**"): protected paths may be read but not created, changed, renamed or deleted`
		if !res.Failed || !strings.Contains(res.Output, want) || !strings.HasPrefix(res.Output, r.tool+": ") {
			t.Errorf("%s %v = %+v, want a refusal naming the pattern", r.tool, r.args, res)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "tests/a_test.py")); string(data) != "assert add(1, 2) == 3\n" {
		t.Fatalf("protected file changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "tests/new_test.py")); err == nil {
		t.Fatal("a protected path was created")
	}
	// Reading stays allowed, and so do unprotected and re-allowed paths.
	if res := call(t, w, "read_file", map[string]any{"path": "tests/a_test.py"}); res.Failed {
		t.Fatalf("read_file of a protected path: %s", res.Output)
	}
	for _, p := range []string{"src/sub.py", "tests/fixtures/data.json"} {
		if res := call(t, w, "write_file", map[string]any{"path": p, "content": "x\n"}); res.Failed {
			t.Fatalf("write_file %s: %s", p, res.Output)
		}
	}
}

func TestRestoreProtected(t *testing.T) {
	w, dir := newProtectedWorkspace(t, []string{"tests/**", "!tests/scratch/**", "verify.sh"}, map[string]string{
		"tests/a_test.py": "A\n", "tests/b_test.py": "B\n", "tests/deep/c_test.py": "C\n", "verify.sh": "pytest\n",
		"tests/d_test.py": "D\n", "src/x.py": "x\n",
	})
	snap, err := w.SnapshotProtected()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Len() != 7 { // 5 files, tests and tests/deep
		t.Fatalf("snapshot holds %d paths, want 7", snap.Len())
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(p("tests/a_test.py"), []byte("weakened\n"), 0o644)) // changed
	must(os.Remove(p("tests/b_test.py")))                                 // deleted
	must(os.RemoveAll(p("tests/deep")))                                   // a deleted directory
	must(os.WriteFile(p("tests/new_test.py"), []byte("new\n"), 0o644))    // created
	must(os.MkdirAll(p("tests/gen/more"), 0o755))                         // created directories
	must(os.WriteFile(p("tests/gen/more/e_test.py"), []byte("E\n"), 0o644))
	must(os.Chmod(p("verify.sh"), 0o755)) // mode changed
	must(os.Remove(p("tests/d_test.py")))
	must(os.Symlink("../src/x.py", p("tests/d_test.py"))) // replaced by a symlink
	must(os.MkdirAll(p("tests/scratch"), 0o755))
	must(os.WriteFile(p("tests/scratch/tmp.txt"), []byte("kept\n"), 0o644)) // not protected
	must(os.WriteFile(p("src/x.py"), []byte("changed\n"), 0o644))           // not protected

	restored, err := w.RestoreProtected(snap)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"tests/a_test.py", "tests/b_test.py", "tests/d_test.py", "tests/deep", "tests/deep/c_test.py",
		"tests/gen", "tests/gen/more", "tests/gen/more/e_test.py", "tests/new_test.py", "verify.sh"}
	if !slices.Equal(restored, want) {
		t.Fatalf("restored %q\nwant     %q", restored, want)
	}
	for name, content := range map[string]string{"tests/a_test.py": "A\n", "tests/b_test.py": "B\n", "tests/deep/c_test.py": "C\n",
		"tests/d_test.py": "D\n", "verify.sh": "pytest\n", "tests/scratch/tmp.txt": "kept\n", "src/x.py": "changed\n"} {
		fi, err := os.Lstat(p(name))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
		if data, _ := os.ReadFile(p(name)); string(data) != content {
			t.Errorf("%s = %q, want %q", name, data, content)
		}
	}
	if fi, _ := os.Stat(p("verify.sh")); fi.Mode().Perm() != 0o644 {
		t.Errorf("verify.sh mode %v, want 0644", fi.Mode())
	}
	for _, gone := range []string{"tests/new_test.py", "tests/gen"} {
		if _, err := os.Lstat(p(gone)); err == nil {
			t.Errorf("%s was created and is still there", gone)
		}
	}
	if again, err := w.RestoreProtected(snap); err != nil || len(again) != 0 {
		t.Fatalf("a second restore found %q, %v", again, err)
	}
}
