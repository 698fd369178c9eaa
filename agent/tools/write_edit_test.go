package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFile(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	content := "package main\n\nfunc main() {}\n"
	out := mustOK(t, call(t, w, "write_file", map[string]any{"path": "deep/new/dir/main.go", "content": content}))
	if !strings.Contains(out, "created") {
		t.Errorf("output %q", out)
	}
	if got := readTestFile(t, filepath.Join(dir, "deep/new/dir/main.go")); got != content {
		t.Fatalf("content %q", got)
	}
	// Overwrite keeps the file's mode (an executable script stays one).
	script := filepath.Join(dir, "run.sh")
	writeTestFile(t, script, "old\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	out = mustOK(t, call(t, w, "write_file", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho new\n"}))
	if !strings.Contains(out, "overwrote") {
		t.Errorf("output %q", out)
	}
	if got := readTestFile(t, script); got != "#!/bin/sh\necho new\n" {
		t.Fatalf("overwritten content %q", got)
	}
	if info, err := os.Stat(script); err != nil || info.Mode().Perm() != 0o755 {
		t.Fatalf("mode after overwrite: %v %v", info.Mode(), err)
	}
	// Empty content is a valid (empty) file.
	mustOK(t, call(t, w, "write_file", map[string]any{"path": "empty.txt", "content": ""}))
	if got := readTestFile(t, filepath.Join(dir, "empty.txt")); got != "" {
		t.Fatalf("empty file holds %q", got)
	}
	mustFail(t, call(t, w, "write_file", map[string]any{"path": "deep", "content": "x"}), "is a directory")

	mustFail(t, call(t, w, "write_file", map[string]any{"path": "run.sh/sub/f", "content": "x"}), "not a directory")
	mustFail(t, call(t, w, "write_file", map[string]any{"path": "run.sh/f", "content": "x"}), "not a directory")
}

func TestWriteFileEscapesRefused(t *testing.T) {
	f := newEscapeFixture(t)
	for _, p := range f.escapingPaths() {
		res := call(t, f.w, "write_file", map[string]any{"path": p, "content": "pwned\n"})
		if !res.Failed {
			t.Errorf("write_file(%q) succeeded: %s", p, res.Output)
		}
	}
	for _, p := range []string{"outdir/new.txt", "sub/reloutdir/new/deeper.txt", f.outsideRel + "/new.txt", filepath.Join(f.outside, "abs.txt")} {
		mustFail(t, call(t, f.w, "write_file", map[string]any{"path": p, "content": "pwned\n"}), "")
	}
	entries, err := os.ReadDir(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("outside dir now holds %d entries", len(entries))
	}
	if got := readTestFile(t, filepath.Join(f.outside, "secret.txt")); got != secret+"\n" {
		t.Fatalf("outside file changed to %q", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(f.ws), "x")); err == nil {
		t.Fatal("../x was created")
	}
}

func TestEditFile(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	p := filepath.Join(dir, "a.go")
	orig := "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n\nfunc c() {\n\treturn 1\n}\n"
	writeTestFile(t, p, orig)

	out := mustOK(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "func b() {\n\treturn 1", "new_string": "func b() {\n\treturn 2"}))
	if !strings.Contains(out, "replaced 1 occurrence") || !strings.Contains(out, "line 5") {
		t.Errorf("output %q", out)
	}
	afterOne := strings.Replace(orig, "func b() {\n\treturn 1", "func b() {\n\treturn 2", 1)
	if got := readTestFile(t, p); got != afterOne {
		t.Fatalf("after single edit: %q", got)
	}

	// Ambiguous: refused, says how many, file untouched.
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "return 1", "new_string": "return 3"}), "2 matches")
	if got := readTestFile(t, p); got != afterOne {
		t.Fatal("ambiguous edit changed the file")
	}
	// Not found: refused with 0 matches, file untouched.
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "return 42", "new_string": "x"}), "0 matches")
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "     1\tfunc a()", "new_string": "x"}), "not found")
	if got := readTestFile(t, p); got != afterOne {
		t.Fatal("failed edit changed the file")
	}
	// replace_all replaces every occurrence.
	out = mustOK(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "return 1", "new_string": "return 0", "replace_all": true}))
	if !strings.Contains(out, "replaced 2 occurrence") {
		t.Errorf("output %q", out)
	}
	if got := readTestFile(t, p); strings.Contains(got, "return 1") || strings.Count(got, "return 0") != 2 || !strings.Contains(got, "return 2") {
		t.Fatalf("after replace_all: %q", got)
	}
	// Deleting text (empty new_string) is allowed.
	mustOK(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "\n\nfunc c() {\n\treturn 0\n}", "new_string": ""}))
	if got := readTestFile(t, p); strings.Contains(got, "func c") {
		t.Fatalf("deletion failed: %q", got)
	}

	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "", "new_string": "x"}), "must not be empty")
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "a.go", "old_string": "func", "new_string": "func"}), "identical")
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "missing.go", "old_string": "a", "new_string": "b"}), "no such file")
	writeTestFile(t, filepath.Join(dir, "bin"), "ab\x00cd")
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "bin", "old_string": "ab", "new_string": "x"}), "binary")
}

func TestEditFileEscapesRefused(t *testing.T) {
	f := newEscapeFixture(t)
	for _, p := range f.escapingPaths() {
		res := call(t, f.w, "edit_file", map[string]any{"path": p, "old_string": "TOPSECRET", "new_string": "pwned"})
		if !res.Failed || strings.Contains(res.Output, secret) {
			t.Errorf("edit_file(%q) = %+v, want refusal", p, res)
		}
	}
	if got := readTestFile(t, filepath.Join(f.outside, "secret.txt")); got != secret+"\n" {
		t.Fatalf("outside file changed to %q", got)
	}
	// Editing through a symlink that stays inside works.
	mustOK(t, call(t, f.w, "edit_file", map[string]any{"path": "inlink", "old_string": "inside", "new_string": "edited"}))
	if got := readTestFile(t, filepath.Join(f.ws, "inside.txt")); got != "edited\n" {
		t.Fatalf("inside.txt = %q", got)
	}
}
