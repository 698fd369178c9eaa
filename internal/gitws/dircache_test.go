package gitws

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cachedGit is a Git whose walk cache takes a directory 20 ms after its
// last change (the default waits longer, which would slow the tests).
func cachedGit(t *testing.T) *Git {
	t.Helper()
	g := newGit(t, ModeLocal, "")
	g.dirs.fine = 20 * time.Millisecond
	return g
}

// settle waits until every directory written so far may be cached.
func settle() { time.Sleep(60 * time.Millisecond) }

// reads counts the directories fn made the cache read.
func reads(c *dirCache, fn func()) int64 {
	before := c.reads.Load()
	fn()
	return c.reads.Load() - before
}

func mkdirs(t *testing.T, dir string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		must(t, os.MkdirAll(filepath.Join(dir, rel), 0o755))
	}
}

// A walk that reads nothing (every directory cached) still finds a link,
// FIFO or alternates file planted after it, at any depth, by replacing a
// directory or by renaming one in.
func TestCachedGitWalkFindsPlants(t *testing.T) {
	target := t.TempDir()
	plants := map[string]func(dir, spare string){
		"link at depth": func(dir, _ string) {
			must(t, os.Symlink(target, filepath.Join(dir, ".git/refs/tags/a/b/c/link")))
		},
		"FIFO at depth": func(dir, _ string) {
			must(t, syscall.Mkfifo(filepath.Join(dir, ".git/refs/tags/a/b/c/fifo"), 0o644))
		},
		"alternates": func(dir, _ string) {
			write(t, dir, ".git/objects/info/alternates", target+"\n")
		},
		"directory replaced by a link": func(dir, _ string) {
			must(t, os.RemoveAll(filepath.Join(dir, ".git/refs/tags/a/b")))
			must(t, os.Symlink(target, filepath.Join(dir, ".git/refs/tags/a/b")))
		},
		"directory replaced by another": func(dir, _ string) {
			must(t, os.RemoveAll(filepath.Join(dir, ".git/refs/tags/a/b")))
			mkdirs(t, dir, ".git/refs/tags/a/b/c")
			must(t, os.Symlink(target, filepath.Join(dir, ".git/refs/tags/a/b/c/link")))
		},
		"directory renamed in": func(dir, spare string) {
			// spare/b/c holds a link and settled before the first walk: only
			// its inode tells it from the b/c the cache read.
			must(t, os.Rename(filepath.Join(dir, ".git/refs/tags/a/b"), filepath.Join(t.TempDir(), "old")))
			must(t, os.Rename(filepath.Join(spare, "b"), filepath.Join(dir, ".git/refs/tags/a/b")))
		},
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			g := cachedGit(t)
			dir := workspace(t, "ws")
			prepare(t, g, dir, round(1, 1))
			mkdirs(t, dir, ".git/refs/tags/a/b/c", ".git/objects/info")
			spare := t.TempDir()
			mkdirs(t, spare, "b/c")
			must(t, os.Symlink(target, filepath.Join(spare, "b/c/link")))
			settle()
			must(t, g.checkRepo(ctx, dir))
			if n := reads(g.dirs, func() { must(t, g.checkRepo(ctx, dir)) }); n != 0 {
				t.Fatalf("the second walk of an unchanged .git read %d directories, want 0 (the cache is not used)", n)
			}
			plant(dir, spare)
			if err := g.checkRepo(ctx, dir); !errors.Is(err, ErrUnsafeRepo) {
				t.Fatalf("checkRepo after the plant = %v, want ErrUnsafeRepo", err)
			}
		})
	}
}

// The same for nested repositories in the work tree.
func TestCachedWorkWalkFindsNestedRepos(t *testing.T) {
	plants := map[string]func(dir, spare string){
		".git directory at depth": func(dir, _ string) { mkdirs(t, dir, "a/b/c/.git") },
		"gitdir file at depth":    func(dir, _ string) { write(t, dir, "a/b/c/.git", "gitdir: /elsewhere\n") },
		"directory replaced by another": func(dir, _ string) {
			must(t, os.RemoveAll(filepath.Join(dir, "a/b")))
			mkdirs(t, dir, "a/b/c/.git")
		},
		"directory renamed in": func(dir, spare string) {
			must(t, os.Rename(filepath.Join(dir, "a/b"), filepath.Join(t.TempDir(), "old")))
			must(t, os.Rename(filepath.Join(spare, "b"), filepath.Join(dir, "a/b")))
		},
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			g := cachedGit(t)
			dir := workspace(t, "ws")
			mkdirs(t, dir, ".git", "a/b/c", "a/x", "y")
			write(t, dir, "a/b/c/f.txt", "x\n")
			spare := t.TempDir()
			mkdirs(t, spare, "b/c/.git")
			settle()
			if got, err := nestedRepos(g.dirs, dir); err != nil || len(got) != 0 {
				t.Fatalf("first walk = %v, %v", got, err)
			}
			if n := reads(g.dirs, func() { _, _ = nestedRepos(g.dirs, dir) }); n != 0 {
				t.Fatalf("the second walk of an unchanged tree read %d directories, want 0", n)
			}
			plant(dir, spare)
			if got, err := nestedRepos(g.dirs, dir); err != nil || !slices.Equal(got, []string{"a/b/c"}) {
				t.Fatalf("walk after the plant = %v, %v; want [a/b/c]", got, err)
			}
		})
	}
}

// A directory whose ctime is not yet settled is read on every walk: a
// change in the same clock tick could leave its ctime as it was.
func TestFreshDirectoriesAreReadAgain(t *testing.T) {
	c := newDirCache(defaultDirCacheBytes)
	c.fine = time.Hour
	dir := t.TempDir()
	mkdirs(t, dir, "a/b")
	if _, err := nestedRepos(c, dir); err != nil {
		t.Fatal(err)
	}
	if n := reads(c, func() { _, _ = nestedRepos(c, dir) }); n != 3 {
		t.Fatalf("the second walk read %d directories, want all 3 (none has settled)", n)
	}
	if len(c.m) != 0 {
		t.Fatalf("the cache holds %d unsettled directories", len(c.m))
	}
}

// The cache stays within its bound on a tree larger than it, evicting,
// and walks through it stay right.
func TestDirCacheIsBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 60 {
		mkdirs(t, dir, fmt.Sprintf("d%02d/e", i))
	}
	settle()
	c := newDirCache(20 * (dirEntryCost + len(dir) + 16))
	c.fine = 20 * time.Millisecond
	for range 3 {
		if got, err := nestedRepos(c, dir); err != nil || len(got) != 0 {
			t.Fatalf("walk = %v, %v", got, err)
		}
		total := 0
		for _, v := range c.m {
			total += v.cost
		}
		if c.size > c.limit || total != c.size || len(c.m) == 0 || len(c.m) >= 121 {
			t.Fatalf("cache holds %d entries, %d bytes (counted %d), limit %d", len(c.m), c.size, total, c.limit)
		}
	}
	mkdirs(t, dir, "d33/e/.git")
	if got, err := nestedRepos(c, dir); err != nil || !slices.Equal(got, []string{"d33/e"}) {
		t.Fatalf("walk after the plant = %v, %v", got, err)
	}
}

// Walks of different workspaces share one cache at once (run with -race).
func TestDirCacheConcurrentWalks(t *testing.T) {
	c := newDirCache(defaultDirCacheBytes)
	c.fine = 20 * time.Millisecond
	var dirs []string
	for i := range 4 {
		dir := t.TempDir()
		mkdirs(t, dir, "a/b", "c")
		mkdirs(t, dir, fmt.Sprintf("n%d/.git", i))
		dirs = append(dirs, dir)
	}
	settle()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i, dir := range dirs {
		for range 10 {
			wg.Go(func() {
				got, err := nestedRepos(c, dir)
				if err == nil && !slices.Equal(got, []string{fmt.Sprintf("n%d", i)}) {
					err = fmt.Errorf("walk of %s = %v", dir, got)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A .git/config checkRepo found safe is not read again while it is
// unchanged (one `git config` for two checks), and a key that runs a
// program, written into it after (in place or by a rename, the same size
// as what it replaced), is refused at the next check.
func TestCheckRepoRereadsAChangedConfig(t *testing.T) {
	ctx := context.Background()
	for name, plant := range map[string]func(path, content string){
		"in place": func(path, content string) { must(t, os.WriteFile(path, []byte(content), 0o644)) },
		"renamed in": func(path, content string) {
			must(t, os.WriteFile(path+".new", []byte(content), 0o644))
			must(t, os.Rename(path+".new", path))
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := cachedGit(t)
			dir := workspace(t, "ws")
			prepare(t, g, dir, round(1, 1))
			cfgPath := filepath.Join(dir, ".git", "config")
			safe, err := os.ReadFile(cfgPath)
			must(t, err)
			settle()
			gitCommands := logGitCommands(t)
			for range 2 {
				must(t, g.checkRepo(ctx, dir))
			}
			if cmds := gitCommands(); slices.Compare(cmds, []string{"config"}) != 0 {
				t.Fatalf("two checks of an unchanged config ran %v, want one config", cmds)
			}
			// The same length: only the ctime tells the change.
			evil := "[core]\n\tsshCommand = x\n"
			evil += string(safe[:len(safe)-len(evil)-1]) + "\n"
			if len(evil) != len(safe) {
				t.Fatalf("test setup: %d bytes against %d", len(evil), len(safe))
			}
			plant(cfgPath, evil)
			if err := g.checkRepo(ctx, dir); !errors.Is(err, ErrUnsafeRepo) {
				t.Fatalf("check after core.sshCommand was written: %v, want ErrUnsafeRepo", err)
			}
		})
	}
}
