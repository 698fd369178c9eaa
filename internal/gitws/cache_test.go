package gitws

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// A scratch made from the cache holds the refs asked for, the cache's
// objects by link, and neither the cache's path nor its refs: its .git
// is a real directory, as a clone's.
func TestScratchFromTheCache(t *testing.T) {
	ctx := context.Background()
	bare, _ := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	scratch := filepath.Join(t.TempDir(), "scratch")
	line := Line{URL: bare, Branch: "main"}
	missing := ScratchRef{Repo: bare, Ref: "refs/heads/no-such-branch", Into: scratchTaskRefPrefix + "x"}
	if err := g.ScratchFrom(ctx, scratch, bare, []ScratchRef{line.ScratchRef(), missing}); err != nil {
		t.Fatal(err)
	}
	want := testkit.Git(t, bare, "rev-parse", "main")
	if got := testkit.Git(t, scratch, "rev-parse", scratchIntegrationRef); got != want {
		t.Fatalf("the scratch's integration ref = %s, want %s", got, want)
	}
	if head, err := g.Integration(ctx, scratch, line); err != nil || head != want {
		t.Fatalf("Integration = %s, %v; want %s", head, err, want)
	}
	if refs := testkit.Git(t, scratch, "for-each-ref", "--format=%(refname)"); refs != scratchIntegrationRef {
		t.Errorf("the scratch holds refs %q, want only %s", refs, scratchIntegrationRef)
	}
	cache := g.cacheFor(bare).dir
	for _, name := range []string{"config", "packed-refs", "objects/info/alternates"} {
		data, _ := os.ReadFile(filepath.Join(scratch, ".git", name))
		if strings.Contains(string(data), cache) || strings.Contains(string(data), g.cacheRoot) {
			t.Errorf("the scratch's .git/%s names the cache: %q", name, data)
		}
	}
	assertNeutral(t, "the cache", cache)
	assertNeutral(t, "the scratch", scratch)
}

// A git command in a scratch that finds an object missing marks the
// scratch's cache damaged (the next step rebuilds it) and is the worker's
// failure, never the task's tree's.
func TestScratchMarksItsCacheDamaged(t *testing.T) {
	ctx := context.Background()
	bare, _ := campaignRemote(t)
	g := newGit(t, ModeRemote, bare)
	scratch := filepath.Join(t.TempDir(), "scratch")
	line := Line{URL: bare, Branch: "main"}
	if err := g.ScratchFrom(ctx, scratch, bare, []ScratchRef{line.ScratchRef()}); err != nil {
		t.Fatal(err)
	}
	head := testkit.Git(t, bare, "rev-parse", "main")
	packs, _ := filepath.Glob(filepath.Join(scratch, ".git", "objects", "pack", "*"))
	for _, p := range packs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	_, err := g.TreeSize(ctx, scratch, head)
	if err == nil {
		t.Fatal("TreeSize of a scratch without objects succeeded")
	}
	var tt *TaskTreeError
	if errors.As(taskTreeError(ctx, "t", err), &tt) {
		t.Errorf("a missing object was taken for the task's tree: %v", err)
	}
	marker := filepath.Join(g.cacheFor(bare).dir, damagedMarker)
	if _, serr := os.Lstat(marker); serr != nil {
		t.Fatalf("the cache was not marked damaged after %v: %v", err, serr)
	}
	// The next scratch rebuilds it.
	if err := g.ScratchFrom(ctx, scratch, bare, []ScratchRef{line.ScratchRef()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(marker); !os.IsNotExist(err) {
		t.Errorf("the rebuilt cache keeps the damage mark (%v)", err)
	}
	if _, err := g.TreeSize(ctx, scratch, head); err != nil {
		t.Errorf("TreeSize in the new scratch: %v", err)
	}
}

// A round's candidates share one pack of the base (linked when the worker
// is root), holding exactly the objects of the base and its history; the
// next round's base replaces it.
func TestCandidatesShareOnePackOfTheBase(t *testing.T) {
	ctx := context.Background()
	g := newGit(t, ModeLocal, "")
	dir := workspace(t, "ws")
	cp, r2 := roundOne(t, g, dir)
	cands := t.TempDir()
	var inodes []uint64
	for _, k := range []string{"1", "2"} {
		cdir := filepath.Join(cands, k)
		if err := g.StartCandidate(ctx, dir, cdir, cp.Commit); err != nil {
			t.Fatal(err)
		}
		packs, _ := filepath.Glob(filepath.Join(cdir, ".git", "objects", "pack", "*.pack"))
		if len(packs) != 1 {
			t.Fatalf("candidate %s holds %d packs, want the round's one", k, len(packs))
		}
		var st syscall.Stat_t
		if err := syscall.Stat(packs[0], &st); err != nil {
			t.Fatal(err)
		}
		inodes = append(inodes, st.Ino)
		want := testkit.Git(t, dir, "rev-list", "--objects", cp.Commit)
		if got := testkit.Git(t, cdir, "rev-list", "--objects", "--all"); got != want {
			t.Errorf("candidate %s holds objects\n%s\nwant the base's\n%s", k, got, want)
		}
	}
	if os.Geteuid() == 0 && inodes[0] != inodes[1] {
		t.Errorf("the candidates' packs are two files (%d, %d), want one linked", inodes[0], inodes[1])
	}
	p := prepare(t, g, dir, r2)
	write(t, dir, "two.txt", "round two\n")
	cp2 := checkpoint(t, g, dir, p, r2, handoff("continue", "two"))
	if err := g.StartCandidate(ctx, dir, filepath.Join(cands, "3"), cp2.Commit); err != nil {
		t.Fatal(err)
	}
	bases, _ := filepath.Glob(filepath.Join(g.cacheRoot, "candidates", "*", "*"))
	if len(bases) != 1 || filepath.Base(bases[0]) != cp2.Commit {
		t.Errorf("the shared packs are %v, want the new base's alone", bases)
	}
}
