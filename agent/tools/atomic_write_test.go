package tools

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestWritesRefuseHardLinks(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	outside := filepath.Join(t.TempDir(), "victim.txt")
	writeTestFile(t, outside, "outside content\n")
	if err := os.Link(outside, filepath.Join(dir, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	mustFail(t, call(t, w, "write_file", map[string]any{"path": "linked.txt", "content": "pwned\n"}), "2 hard links")
	mustFail(t, call(t, w, "edit_file", map[string]any{"path": "linked.txt", "old_string": "outside", "new_string": "pwned"}), "2 hard links")
	// Neither name changed, and the link still joins them.
	for _, p := range []string{outside, filepath.Join(dir, "linked.txt")} {
		if got := readTestFile(t, p); got != "outside content\n" {
			t.Fatalf("%s = %q", p, got)
		}
	}
	a, _ := os.Stat(outside)
	b, _ := os.Stat(filepath.Join(dir, "linked.txt"))
	if !os.SameFile(a, b) {
		t.Fatal("the hard link was replaced")
	}
	// A link reached through a symlink inside the workspace is refused too.
	if err := os.Symlink("linked.txt", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	mustFail(t, call(t, w, "write_file", map[string]any{"path": "alias", "content": "pwned\n"}), "hard links")
	if got := readTestFile(t, outside); got != "outside content\n" {
		t.Fatalf("outside = %q", got)
	}
}

func TestWritesKeepModeAndSymlinks(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	// 0o666 is wider than the usual umask allows a new file: only an
	// explicit chmod of the temporary file keeps it.
	p := filepath.Join(dir, "shared.txt")
	writeTestFile(t, p, "one\n")
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	mustOK(t, call(t, w, "edit_file", map[string]any{"path": "shared.txt", "old_string": "one", "new_string": "two"}))
	mustOK(t, call(t, w, "write_file", map[string]any{"path": "shared.txt", "content": "three\n"}))
	if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o666 {
		t.Fatalf("mode after edit and write: %v %v", info.Mode(), err)
	}
	// Writing through a symlink inside the workspace changes its target and
	// keeps the link.
	writeTestFile(t, filepath.Join(dir, "sub/real.txt"), "real\n")
	if err := os.Symlink("sub/real.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	mustOK(t, call(t, w, "write_file", map[string]any{"path": "link.txt", "content": "via link\n"}))
	mustOK(t, call(t, w, "edit_file", map[string]any{"path": "link.txt", "old_string": "via", "new_string": "edited via"}))
	if got := readTestFile(t, filepath.Join(dir, "sub/real.txt")); got != "edited via link\n" {
		t.Fatalf("target = %q", got)
	}
	if info, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.txt is no longer a symlink: %v %v", info.Mode(), err)
	}
	// A dangling symlink inside the workspace gets its target created.
	if err := os.Symlink("sub/new.txt", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	mustOK(t, call(t, w, "write_file", map[string]any{"path": "dangling", "content": "new\n"}))
	if got := readTestFile(t, filepath.Join(dir, "sub/new.txt")); got != "new\n" {
		t.Fatalf("dangling target = %q", got)
	}
	assertNoTempFiles(t, dir)
}

// TestWritesAreAtomic has a reader race a writer that replaces a large file
// again and again: every read must see one whole version, never a
// truncated or mixed one, which an in-place rewrite shows at once.
func TestWritesAreAtomic(t *testing.T) {
	w, dir := newTestWorkspace(t, DefaultLimits())
	const size = 1 << 20
	versions := [][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size)}
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, versions[0], 0o644); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	var reads, bad atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			got, err := os.ReadFile(p)
			if err != nil || (!bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1])) {
				bad.Add(1)
			}
			reads.Add(1)
		}
	}()
	for i := range 40 {
		v := versions[(i+1)%2]
		if i%2 == 0 {
			mustOK(t, call(t, w, "write_file", map[string]any{"path": "big.txt", "content": string(v)}))
		} else {
			mustOK(t, call(t, w, "edit_file", map[string]any{"path": "big.txt", "old_string": string(versions[i%2][:size/2]), "new_string": string(v[:size/2]), "replace_all": true}))
		}
	}
	done.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("the reader never ran")
	}
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d of %d reads saw a partial file", n, reads.Load())
	}
	assertNoTempFiles(t, dir)
}

// assertNoTempFiles fails if a write left its temporary file behind.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempFilePrefix) {
			t.Errorf("temporary file left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
