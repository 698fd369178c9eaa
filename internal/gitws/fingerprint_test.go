package gitws

import (
	"context"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFilesFingerprint(t *testing.T) {
	ctx := context.Background()
	dir := workspace(t, "ws")
	write(t, dir, "a.txt", "a\n")
	write(t, dir, ".git/HEAD", "ref: refs/heads/main\n")
	fp := func() string {
		t.Helper()
		s, err := FilesFingerprint(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := fp()
	if fp() != base {
		t.Fatal("the fingerprint is not stable")
	}
	write(t, dir, ".git/index", "changed\n")
	if fp() != base {
		t.Fatal(".git counted in the fingerprint")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	touched := fp()
	if touched == base {
		t.Fatal("a changed modification time did not change the fingerprint")
	}
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	moded := fp()
	if moded == touched {
		t.Fatal("a changed mode did not change the fingerprint")
	}
	write(t, dir, "sub/new.txt", "new\n")
	if fp() == moded {
		t.Fatal("a new file did not change the fingerprint")
	}
}

func TestWorkTreeFingerprint(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	p := prepare(t, g, dir, round(1, 1))
	write(t, dir, ".gitignore", "build/\n")
	write(t, dir, "a.txt", "a\n")
	checkpoint(t, g, dir, p, round(1, 1), handoff("continue", "a"))
	tree := func() string {
		t.Helper()
		s, err := g.WorkTree(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := tree()
	if base != testkit.Git(t, dir, "rev-parse", "HEAD^{tree}") {
		t.Fatal("a clean work tree's fingerprint is not HEAD's tree")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "build/out.bin", "ignored\n")
	if tree() != base {
		t.Fatal("a touched file or an ignored file changed the git fingerprint")
	}
	write(t, dir, "untracked.txt", "u\n")
	withUntracked := tree()
	if withUntracked == base {
		t.Fatal("an untracked file did not change the git fingerprint")
	}
	if st := testkit.Git(t, dir, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Fatalf("the fingerprint staged into the real index: %q", st)
	}
	if err := os.Remove(filepath.Join(dir, "untracked.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.txt", "changed\n")
	if tree() == base || tree() == withUntracked {
		t.Fatal("an edit did not change the git fingerprint")
	}
}
