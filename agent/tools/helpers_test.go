package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newTestWorkspace opens a workspace on a fresh temporary directory.
func newTestWorkspace(t testing.TB, limits Limits) (*Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	w, err := OpenWorkspace(dir, limits)
	if err != nil {
		t.Fatalf("OpenWorkspace: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w, dir
}

// toolNamed returns the workspace tool with the given name.
func toolNamed(t *testing.T, w *Workspace, name string) Tool {
	t.Helper()
	for _, tl := range w.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

// call runs a tool with args (a string is passed verbatim, anything else is
// marshalled) and fails the test on a Go error, which file tools never return
// for ordinary problems.
func call(t *testing.T, w *Workspace, name string, args any) Result {
	t.Helper()
	var raw json.RawMessage
	if s, ok := args.(string); ok {
		raw = json.RawMessage(s)
	} else {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = b
	}
	res, err := toolNamed(t, w, name).Run(context.Background(), raw)
	if err != nil {
		t.Fatalf("%s(%s): unexpected Go error: %v", name, raw, err)
	}
	return res
}

func mustOK(t *testing.T, res Result) string {
	t.Helper()
	if res.Failed {
		t.Fatalf("unexpected tool failure: %s", res.Output)
	}
	return res.Output
}

func mustFail(t *testing.T, res Result, wantSubstr string) {
	t.Helper()
	if !res.Failed {
		t.Fatalf("expected a tool failure containing %q, got success: %s", wantSubstr, res.Output)
	}
	if !strings.Contains(res.Output, wantSubstr) {
		t.Fatalf("failure %q does not contain %q", res.Output, wantSubstr)
	}
}

func writeTestFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// escapeFixture is a workspace next to an outside directory holding a
// secret, with symlinks from the workspace pointing out (absolute and
// relative) and one pointing inside as a positive control.
type escapeFixture struct {
	w          *Workspace
	ws         string // workspace dir
	outside    string // outside dir
	outsideRel string // outside dir relative to the workspace ("../...")
}

const secret = "TOPSECRET-outside-the-workspace"

func newEscapeFixture(t *testing.T) escapeFixture {
	t.Helper()
	w, ws := newTestWorkspace(t, DefaultLimits())
	outside := t.TempDir()
	writeTestFile(t, filepath.Join(outside, "secret.txt"), secret+"\n")
	rel, err := filepath.Rel(ws, outside)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(ws, "inside.txt"), "inside\n")
	for link, target := range map[string]string{
		"outdir":        outside,                              // absolute, to a directory
		"outfile":       filepath.Join(outside, "secret.txt"), // absolute, to a file
		"reloutfile":    filepath.Join(rel, "secret.txt"),     // relative, to a file
		"sub/reloutdir": filepath.Join("..", rel),             // relative, from a subdirectory
		"inlink":        "inside.txt",                         // stays inside: allowed
	} {
		p := filepath.Join(ws, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return escapeFixture{w: w, ws: ws, outside: outside, outsideRel: filepath.ToSlash(rel)}
}

// escapingPaths are paths that must all be refused by every file tool.
func (f escapeFixture) escapingPaths() []string {
	return []string{
		"../x",
		"a/../../x",
		f.outsideRel + "/secret.txt",
		filepath.Join(f.outside, "secret.txt"), // absolute
		"/etc/passwd",
		"outfile",
		"reloutfile",
		"outdir/secret.txt",
		"sub/reloutdir/secret.txt",
	}
}
