//go:build linux

package toolcache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func overlayStore(t *testing.T, maxMB int) *Store {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only a root worker mounts overlays")
	}
	return newStore(t, maxMB)
}

// retired lists the store's retired layers waiting for their readers.
func retired(t *testing.T, s *Store) []string {
	t.Helper()
	got, _ := filepath.Glob(filepath.Join(s.root, "work", "retired-*"))
	return got
}

// Two verifies of one line, each an overlay, both land: the line holds
// what each wrote (a farm that replaced the line lost the other's). Past
// maxLayers the layers become one; the layers a mounted copy reads stay
// on disk until it goes, and it reads them all the while.
func TestOverlayLayersStackMergeAndOutliveTheirReaders(t *testing.T) {
	s := overlayStore(t, 64)
	a, b := checkout(t, s, "campaign-a", ""), checkout(t, s, "campaign-a", "")
	write(t, filepath.Join(a.Dir, "go-build", "aa", "lane1-d"), "one")
	write(t, filepath.Join(b.Dir, "go-build", "bb", "lane2-d"), "two")
	for _, c := range []*Copy{a, b} {
		if _, err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(layers(t, s, "campaign-a")); n != 2 {
		t.Fatalf("two landed verifies made %d layers, want 2", n)
	}
	reader := checkout(t, s, "campaign-a", "")
	for i := 0; i < maxLayers; i++ {
		commitLine(t, s, "campaign-a", map[string]string{fmt.Sprintf("go-mod/m%d@v1/go.mod", i): fmt.Sprint(i)})
	}
	ls := layers(t, s, "campaign-a")
	if len(ls) > maxLayers {
		t.Fatalf("the line stacks %d layers, more than %d", len(ls), maxLayers)
	}
	if len(retired(t, s)) == 0 {
		t.Fatal("the layers merged under a mounted copy were removed while it reads them")
	}
	for _, f := range []string{"go-build/aa/lane1-d", "go-build/bb/lane2-d"} {
		if b, err := os.ReadFile(filepath.Join(reader.Dir, f)); err != nil || len(b) != 3 {
			t.Fatalf("the mounted copy lost %s after the merge: %q, %v", f, b, err)
		}
	}
	fresh := checkout(t, s, "campaign-a", "")
	for _, f := range []string{"go-build/aa/lane1-d", "go-build/bb/lane2-d", fmt.Sprintf("go-mod/m%d@v1/go.mod", maxLayers-1)} {
		if _, err := os.Stat(filepath.Join(fresh.Dir, f)); err != nil {
			t.Fatalf("a copy after the merge lacks %s: %v", f, err)
		}
	}
	if fresh.From.Files != int64(maxLayers+2) {
		t.Fatalf("the line holds %d files, want %d", fresh.From.Files, maxLayers+2)
	}
	reader.Remove()
	fresh.Remove()
	if r := retired(t, s); len(r) != 0 {
		t.Fatalf("the last reader went and the retired layers stayed: %v", r)
	}
}

// What a command deletes or hides in its overlay (a whiteout, an opaque
// directory) never reaches the line: a commit only adds.
func TestOverlayCommitOnlyAdds(t *testing.T) {
	s := overlayStore(t, 64)
	commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/keep-d": "kept", "npm/x/y": "npm"})
	c := checkout(t, s, "campaign-a", "")
	if err := os.Remove(filepath.Join(c.Dir, "go-build", "ab", "keep-d")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(c.Dir, "npm", "x")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(c.Dir, "npm", "x", "new"), "new")        // x is now opaque in the upper directory
	write(t, filepath.Join(c.Dir, marker), `{"files":0,"bytes":0}`) // a forged marker
	if _, err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	top := topLayer(t, s, "campaign-a")
	err := filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, _ := os.Lstat(path); !fi.IsDir() && !fi.Mode().IsRegular() {
			t.Errorf("the new layer holds %s (%v): a whiteout reached the line", path, fi.Mode())
		}
		buf := make([]byte, 1024)
		if n, _ := unix.Llistxattr(path, buf); n > 0 && strings.Contains(string(buf[:n]), "overlay.") {
			t.Errorf("%s keeps the overlay's attributes %q", path, buf[:n])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	next := checkout(t, s, "campaign-a", "")
	if next.Rebuilt != "" {
		t.Fatalf("the command's forged marker made the line damaged: %s", next.Rebuilt)
	}
	for f, want := range map[string]string{"go-build/ab/keep-d": "kept", "npm/x/y": "npm", "npm/x/new": "new"} {
		if b, err := os.ReadFile(filepath.Join(next.Dir, f)); err != nil || string(b) != want {
			t.Fatalf("after the commit, %s = %q, %v; want %q", f, b, err, want)
		}
	}
}

// A killed worker's overlay (its mount and copy, its lock gone with it) is
// unmounted and removed when a worker opens the store; a live worker's
// is left alone, however old.
func TestStaleOverlayIsSweptAtStart(t *testing.T) {
	s := overlayStore(t, 64)
	commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/e-d": "e"})
	c, err := s.Checkout("campaign-a", "")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleCopy)
	if err := os.Chtimes(c.ov.root, old, old); err != nil {
		t.Fatal(err)
	}
	reopen := func() {
		if _, err := New(s.root, 64, Owner{UID: 65534, GID: 65534, Other: true}); err != nil {
			t.Fatal(err)
		}
	}
	reopen()
	if b, err := os.ReadFile(filepath.Join(c.Dir, "go-build", "ab", "e-d")); err != nil || string(b) != "e" {
		t.Fatalf("a starting worker took a live worker's overlay: %q, %v", b, err)
	}
	c.ov.alive.Close() // the worker is gone: its locks with it
	c.ov.readers.Close()
	reopen()
	if m := mountsUnder(t, s.root); len(m) != 0 {
		t.Fatalf("the dead worker's overlay is still mounted: %v", m)
	}
	if _, err := os.Stat(c.ov.root); !os.IsNotExist(err) {
		t.Fatalf("the dead worker's copy is still there: %v", err)
	}
}

// Once its command has ended a copy holds no mount; it commits as well.
func TestUnmountedCopyCommits(t *testing.T) {
	s := overlayStore(t, 64)
	c := checkout(t, s, "campaign-a", "")
	write(t, filepath.Join(c.Dir, "npm", "wrote"), "w")
	if err := c.Unmount(); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, s.root); len(m) != 0 {
		t.Fatalf("an unmounted copy is still mounted: %v", m)
	}
	if st, err := c.Commit(); err != nil || st.Files != 1 {
		t.Fatalf("Commit after Unmount = %+v, %v", st, err)
	}
	if b, err := os.ReadFile(filepath.Join(topLayer(t, s, "campaign-a"), "npm", "wrote")); err != nil || string(b) != "w" {
		t.Fatalf("the line after the commit: %q, %v", b, err)
	}
}

// A worker starting beside one whose overlay reads retired layers leaves
// them (whatever their age); once no overlay reads them, a start removes
// them.
func TestRetiredLayersGoOnlyWithoutReaders(t *testing.T) {
	s := overlayStore(t, 64)
	commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/e-d": "e"})
	reader := checkout(t, s, "campaign-a", "")
	dir, _ := s.lineDir("campaign-a")
	s.retire("campaign-a", dir)
	old := time.Now().Add(-2 * staleCopy)
	for _, r := range retired(t, s) {
		os.Chtimes(r, old, old)
	}
	if _, err := New(s.root, 64, Owner{UID: 65534, GID: 65534, Other: true}); err != nil {
		t.Fatal(err)
	}
	if len(retired(t, s)) != 1 {
		t.Fatal("a starting worker removed a layer an overlay reads")
	}
	if b, err := os.ReadFile(filepath.Join(reader.Dir, "go-build", "ab", "e-d")); err != nil || string(b) != "e" {
		t.Fatalf("the reader lost its layer: %q, %v", b, err)
	}
	reader.Remove()
	os.MkdirAll(filepath.Join(s.root, "work", "retired-0123456789abcdef-campaign-a"), 0o700) // a killed worker's
	if _, err := New(s.root, 64, Owner{UID: 65534, GID: 65534, Other: true}); err != nil {
		t.Fatal(err)
	}
	if r := retired(t, s); len(r) != 0 {
		t.Fatalf("retired layers no overlay reads survived a start: %v", r)
	}
}

// A layer added while the older ones are being merged stays on top of the
// merged one: its file wins over the older version, and nothing is lost.
func TestLayerAddedDuringAMergeStaysOnTop(t *testing.T) {
	s := overlayStore(t, 64)
	for i, content := range []string{"old", "b", "c"} {
		commitLine(t, s, "campaign-a", map[string]string{"pip/shared": content, fmt.Sprintf("pip/f%d", i): "x"})
	}
	dir, _ := s.lineDir("campaign-a")
	snapshot, _ := readLine(dir)
	commitLine(t, s, "campaign-a", map[string]string{"pip/shared": "newest", "pip/late": "late"})
	st, err := s.compact("campaign-a", dir, snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(layers(t, s, "campaign-a")); n != 2 {
		t.Fatalf("after the merge the line has %d layers, want the merged one and the late one", n)
	}
	if st.Files != 6 { // merged: shared, f0, f1, f2; late: shared, late
		t.Fatalf("the line holds %+v after the merge, want 6 files", st)
	}
	c := checkout(t, s, "campaign-a", "")
	for f, want := range map[string]string{"pip/shared": "newest", "pip/late": "late", "pip/f0": "x", "pip/f2": "x"} {
		if b, err := os.ReadFile(filepath.Join(c.Dir, f)); err != nil || string(b) != want {
			t.Fatalf("%s = %q, %v; want %q", f, b, err, want)
		}
	}
	// A merge of layers that are no longer the line's (a rebuild took
	// them) replaces nothing.
	s.retire("campaign-a", dir)
	if _, err := s.compact("campaign-a", dir, snapshot); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a stale merge brought back a retired line: %v", err)
	}
}
