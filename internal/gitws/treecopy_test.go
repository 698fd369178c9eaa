//go:build linux

package gitws

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// treeOf is every entry of a work tree but .git: file bytes, a symlink's
// target, a directory's or executable's kind.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(path)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(path)
			out[rel] = fi.Mode().Perm().String()[3:4] + " " + string(b) // the owner's x bit and the bytes
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func inode(t *testing.T, path string) (uint64, uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Ino, st.Uid
}

// A scratch lent from a tree copy holds the same tree as a full checkout;
// the copy rewrites only what changed; a file changed through a link
// leaves the copy when the scratch is given back, and the next scratch
// gets the true bytes (treecopy.go).
func TestTreeCopyLendsOnlyWhatChanged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only a root worker lends tree copies")
	}
	ctx := context.Background()
	bare, person := campaignRemote(t)
	write(t, person, "keep.txt", "kept\n")
	write(t, person, "sub/edit.txt", "before\n")
	write(t, person, "run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(person, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("keep.txt", filepath.Join(person, "alias")); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, person, "add", "-A")
	testkit.Git(t, person, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-q", "-m", "more")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	main := testkit.Git(t, person, "rev-parse", "HEAD")
	task := TaskBranch{ID: "one", Repo: bare, Branch: "ralph/campaigns/c/tasks/one", Go: 1}
	task.Commit = taskCommit(t, person, task.Branch, main, map[string]string{"sub/edit.txt": "after\n", "new/deep/file.txt": "new\n"})
	line := Line{URL: bare, Branch: "ralph/campaigns/c/integration"}

	lending, plain := newGit(t, ModeRemote, bare), newGit(t, ModeRemote, bare)
	lending.LendTreesTo(65534, 65534)
	base := t.TempDir()
	merge := func(g *Git, dir string) string {
		t.Helper()
		ref, _ := task.ScratchRef()
		if err := g.ScratchFrom(ctx, dir, bare, []ScratchRef{line.ScratchRef(), ref}); err != nil {
			t.Fatal(err)
		}
		head, err := g.Integration(ctx, dir, line)
		if err != nil {
			t.Fatal(err)
		}
		tip, _, conflict, err := g.MergeStack(ctx, dir, "c", head, []TaskBranch{task})
		if err != nil || conflict != nil {
			t.Fatalf("merge: %v %+v", err, conflict)
		}
		return tip
	}
	lent, full := filepath.Join(base, "lent"), filepath.Join(base, "full")
	head := merge(plain, full)
	// The first lend fills the copy with the head, the merge's tip then
	// changes two paths of it.
	if err := lending.ScratchFrom(ctx, lent, bare, []ScratchRef{line.ScratchRef()}); err != nil {
		t.Fatal(err)
	}
	if err := lending.CheckoutHead(ctx, lent, main); err != nil {
		t.Fatal(err)
	}
	tc, ok := lending.lentCopy(lent)
	if !ok {
		t.Fatal("no tree copy for the scratch")
	}
	keptIno, _ := inode(t, filepath.Join(tc.tree(), "keep.txt"))
	lending.ForgetScratch(lent)
	treeID := func(dir, commit string) string {
		return testkit.Git(t, dir, "-c", "safe.directory=*", "rev-parse", commit+"^{tree}")
	}
	tip := merge(lending, lent)
	if a, b := treeID(lent, tip), treeID(full, head); a != b {
		t.Fatalf("merged trees differ: %s lent, %s in full", a, b)
	}
	if got, want := treeOf(t, lent), treeOf(t, full); !maps.Equal(got, want) {
		t.Fatalf("lent tree %v\nfull checkout %v", got, want)
	}
	if st := testkit.Git(t, lent, "-c", "safe.directory=*", "status", "--porcelain"); st != "" || testkit.Git(t, lent, "-c", "safe.directory=*", "rev-parse", "HEAD") != tip {
		t.Fatalf("the lent scratch's status %q, HEAD not %s", st, tip)
	}
	// Incremental: the unchanged file is the same inode, in the copy and the
	// scratch, the commands' uid's (the changed one holds its new bytes:
	// the tree comparison above).
	if ino, uid := inode(t, filepath.Join(lent, "keep.txt")); ino != keptIno || uid != 65534 {
		t.Fatalf("keep.txt: inode %d uid %d, want the copy's %d, uid 65534", ino, uid, keptIno)
	}

	if err := lending.Land(ctx, lent, line, tip, main); err != nil { // the next scratches start from it
		t.Fatal(err)
	}

	// A command writes keep.txt through its link and replaces edit.txt.
	if err := os.WriteFile(filepath.Join(lent, "keep.txt"), []byte("poisoned\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(lent, "sub", "edit.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, lent, "sub/edit.txt", "replaced\n")
	lending.ForgetScratch(lent)
	if _, err := os.Lstat(filepath.Join(tc.tree(), "keep.txt")); !os.IsNotExist(err) {
		t.Fatalf("the copy kept keep.txt written through a link: %v", err)
	}
	if !pathExists(tc.marker()) {
		t.Fatal("the copy was not marked whole when given back")
	}
	if err := os.RemoveAll(lent); err != nil {
		t.Fatal(err)
	}
	if err := lending.ScratchFrom(ctx, lent, bare, []ScratchRef{line.ScratchRef()}); err != nil {
		t.Fatal(err)
	}
	if err := lending.CheckoutHead(ctx, lent, tip); err != nil {
		t.Fatal(err)
	}
	if got, want := treeOf(t, lent), treeOf(t, full); !maps.Equal(got, want) {
		t.Fatalf("after a poisoned lend: %v\nwant %v", got, want)
	}

	// A copy without its marker (a worker killed during a lend) is rebuilt.
	lending.ForgetScratch(lent)
	if err := os.Remove(tc.marker()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tc.tree(), "stray"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := lending.ScratchFrom(ctx, lent, bare, []ScratchRef{line.ScratchRef()}); err != nil {
		t.Fatal(err)
	}
	if err := lending.CheckoutHead(ctx, lent, tip); err != nil {
		t.Fatal(err)
	}
	if pathExists(filepath.Join(tc.tree(), "stray")) {
		t.Fatal("an unmarked copy was updated, not rebuilt")
	}
	if got, want := treeOf(t, lent), treeOf(t, full); !maps.Equal(got, want) {
		t.Fatalf("after a rebuild: %v\nwant %v", got, want)
	}
	lending.ForgetScratch(lent)
}

// A lent scratch says when a command may first write its files: past the
// clock's tick of their linking (the worker no longer sleeps it out
// itself; the verify waits for it after its sandbox's setup).
func TestLentScratchSaysWhenItSettles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only a root worker lends tree copies")
	}
	ctx := context.Background()
	bare, person := campaignRemote(t)
	main := taskCommit(t, person, "main", testkit.Git(t, bare, "rev-parse", "main"), map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	line := Line{URL: bare, Branch: "ralph/campaigns/c/integration"}
	g := newGit(t, ModeRemote, bare)
	g.LendTreesTo(65534, 65534)
	dir := filepath.Join(t.TempDir(), "lent")
	if !g.LendSettled(dir).IsZero() {
		t.Fatal("a scratch that lends nothing has a settle time")
	}
	if err := g.ScratchFrom(ctx, dir, bare, []ScratchRef{line.ScratchRef()}); err != nil {
		t.Fatal(err)
	}
	head, err := g.Integration(ctx, dir, line)
	if err != nil || head != main {
		t.Fatalf("integration head %s, %v; want %s", head, err, main)
	}
	if err := g.CheckoutHead(ctx, dir, head); err != nil {
		t.Fatal(err)
	}
	settled := g.LendSettled(dir)
	var newest time.Time
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Type().IsRegular() {
			st, _ := lentState(filepath.Join(dir, e.Name()))
			newest = later(newest, st.ctime)
		}
	}
	if newest.IsZero() || settled.Before(newest.Add(lendSettle)) {
		t.Fatalf("settles at %v, want at least %v past the newest lent file's ctime %v", settled, lendSettle, newest)
	}
	g.ForgetScratch(dir)
	if !g.LendSettled(dir).IsZero() {
		t.Fatal("a scratch given back still has a settle time")
	}
}
