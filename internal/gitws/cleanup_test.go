//go:build linux

package gitws

import (
	"context"
	"crypto/rand"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// duBytes is the bytes dir takes on disk (allocated blocks).
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func randomText(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// age sets path's mtime d ago.
func age(t *testing.T, path string, d time.Duration) {
	t.Helper()
	then := time.Now().Add(-d)
	if err := os.Chtimes(path, then, then); err != nil {
		t.Fatal(err)
	}
}

// The object cache keeps a task's ref only while steps fetch it: a ref no
// step fetched for mirrorRefIdle (its task ended) is dropped at the next
// pass, and the objects only it reached leave the cache's disk; the refs
// this step fetched stay, however old their file was.
func TestCacheDropsRefsNobodyFetches(t *testing.T) {
	ctx := context.Background()
	bare, person := campaignRemote(t)
	main := testkit.Git(t, bare, "rev-parse", "main")
	ended := TaskBranch{ID: "ended", Repo: bare, Branch: "ralph/campaigns/c/tasks/ended"}
	// 2 MB that no other ref reaches (random: git cannot compress it).
	blob := randomText(t, 2<<20)
	taskCommit(t, person, ended.Branch, main, map[string]string{"big.bin": blob})
	running := TaskBranch{ID: "running", Repo: bare, Branch: "ralph/campaigns/c/tasks/running"}
	taskCommit(t, person, running.Branch, main, map[string]string{"small.txt": "small\n"})
	blobID := testkit.Git(t, bare, "rev-parse", ended.Branch+":big.bin")

	g := newGit(t, ModeRemote, bare)
	line := Line{URL: bare, Branch: "main"}
	scratch := func(tasks ...TaskBranch) {
		t.Helper()
		refs := []ScratchRef{line.ScratchRef()}
		for _, tb := range tasks {
			r, _ := tb.ScratchRef()
			refs = append(refs, r)
		}
		dir := filepath.Join(t.TempDir(), "scratch")
		if err := g.ScratchFrom(ctx, dir, bare, refs); err != nil {
			t.Fatal(err)
		}
		g.ForgetScratch(dir)
	}
	scratch(ended, running)
	cache := g.cacheFor(bare).dir
	refs := func() string { return testkit.Git(t, cache, "for-each-ref", "--format=%(refname)") }
	if got := refs(); !strings.Contains(got, "tasks/ended") || !strings.Contains(got, "tasks/running") {
		t.Fatalf("the cache's refs after the first step: %q", got)
	}
	before := duBytes(t, filepath.Join(cache, "objects"))

	// A day later: the pass is due, every ref's file is old, the running
	// task's ref is fetched again (unchanged: git leaves its file alone).
	age(t, filepath.Join(cache, pruneStamp), 2*prunePass)
	for _, ref := range strings.Split(refs(), "\n") {
		age(t, filepath.Join(cache, filepath.FromSlash(ref)), mirrorRefIdle+time.Hour)
	}
	scratch(running)
	got := refs()
	if strings.Contains(got, "tasks/ended") {
		t.Errorf("the ended task's ref is still in the cache: %q", got)
	}
	if !strings.Contains(got, "tasks/running") || !strings.Contains(got, "heads/main") {
		t.Errorf("the refs this step fetched were dropped: %q", got)
	}
	if err := exec.Command("git", "-C", cache, "cat-file", "-e", blobID).Run(); err == nil {
		t.Errorf("the ended task's blob %s is still in the cache", blobID)
	}
	after := duBytes(t, filepath.Join(cache, "objects"))
	t.Logf("cache objects: %d bytes before, %d after", before, after)
	if before-after < 2<<20 {
		t.Errorf("the cache's objects went from %d to %d bytes: the ended task's 2 MB are still on disk", before, after)
	}

	// Within the pass's hour nothing is looked at again.
	for _, ref := range strings.Split(refs(), "\n") {
		age(t, filepath.Join(cache, filepath.FromSlash(ref)), mirrorRefIdle+time.Hour)
	}
	scratch()
	if got := refs(); !strings.Contains(got, "tasks/running") {
		t.Errorf("a second pass ran within %s: %q", prunePass, got)
	}
}

// Tree copies are a pool per cache: scratches that check out one after
// the other (each lane's scratch is new) share one copy, scratches that
// check out at once get one each, and no more.
func TestTreeCopiesArePooled(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only a root worker lends tree copies")
	}
	ctx := context.Background()
	bare, _ := campaignRemote(t)
	main := testkit.Git(t, bare, "rev-parse", "main")
	g := newGit(t, ModeRemote, bare)
	g.LendTreesTo(65534, 65534)
	line := Line{URL: bare, Branch: "main"}
	base := t.TempDir()
	lend := func(name string) string {
		t.Helper()
		dir := filepath.Join(base, name)
		if err := g.ScratchFrom(ctx, dir, bare, []ScratchRef{line.ScratchRef()}); err != nil {
			t.Fatal(err)
		}
		if err := g.CheckoutHead(ctx, dir, main); err != nil {
			t.Fatal(err)
		}
		if _, ok := g.lentCopy(dir); !ok {
			t.Fatalf("%s was not lent a copy", name)
		}
		return dir
	}
	copies := func() []string {
		dirs, _ := filepath.Glob(filepath.Join(g.cacheRoot, treesDirName, "*-[0-9]*"))
		var out []string
		for _, d := range dirs {
			if !strings.HasSuffix(d, ".lock") {
				out = append(out, filepath.Base(d))
			}
		}
		return out
	}
	for i := 1; i <= 5; i++ { // five lanes, one after the other
		dir := lend("lane-" + string(rune('0'+i)))
		g.ForgetScratch(dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	if got := copies(); len(got) != 1 {
		t.Fatalf("five scratches one after the other made copies %v, want one", got)
	}
	a, b := lend("at-once-a"), lend("at-once-b")
	if got := copies(); len(got) != 2 {
		t.Fatalf("two scratches at once made copies %v, want two", got)
	}
	g.ForgetScratch(a)
	g.ForgetScratch(b)
	lend("after")
	if got := copies(); len(got) != 2 {
		t.Fatalf("a third scratch after them made copies %v, want still two", got)
	}
}

// At worker start (New) the tree copies a killed worker left half written
// are removed, those of the older per-scratch layout and those idle past
// treeCopyIdle too, and a candidates' base pack a day old; a copy another
// live worker holds, a fresh one and this round's pack stay.
func TestWorkerStartRemovesKilledWorkersTreeCopies(t *testing.T) {
	session := t.TempDir()
	hooks := filepath.Join(session, "empty-hooks")
	trees := filepath.Join(session, cacheDirName, treesDirName)
	mk := func(name string, marked bool) string {
		t.Helper()
		dir := filepath.Join(trees, name)
		write(t, filepath.Join(dir, "tree"), "big.bin", strings.Repeat("x", 1<<20))
		if marked {
			write(t, dir, treeCopyMarker, "0123\n")
		}
		return dir
	}
	fresh := mk("0123456789abcdef01234567-0", true)
	killed := mk("0123456789abcdef01234567-1", false) // a lend cut short
	held := mk("0123456789abcdef01234567-2", false)   // a live worker's lend
	idle := mk("0123456789abcdef01234567-3", true)
	age(t, filepath.Join(idle, treeCopyMarker), treeCopyIdle+time.Hour)
	oldLayout := mk("fedcba9876543210fedcba98", true)
	// The candidates' shared base packs of a round a day ago and of now.
	pack := func(name string, ago time.Duration) string {
		dir := filepath.Join(session, cacheDirName, candidatesDirName, name)
		write(t, filepath.Join(dir, "b0"), "pack-1.pack", strings.Repeat("p", 1<<20))
		age(t, dir, ago)
		return dir
	}
	oldPack, newPack := pack("aaaaaaaaaaaaaaaaaaaaaaaa", candidatePackIdle+time.Hour), pack("bbbbbbbbbbbbbbbbbbbbbbbb", 0)

	// The killed worker held its lock until it was killed; the live one
	// holds its lock now.
	for _, c := range []struct {
		dir  string
		kill bool
	}{{killed, true}, {held, false}} {
		// One process holding the lock itself, as a worker does.
		cmd := exec.Command("sh", "-c", `exec 9>"$1" && flock -x 9 && exec sleep 60`, "sh", c.dir+".lock")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitLocked(t, c.dir+".lock")
		if c.kill {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
		}
	}
	before := duBytes(t, filepath.Join(session, cacheDirName))
	cfg := DefaultConfig()
	cfg.Mode, cfg.Remote = ModeRemote, "https://example.invalid/r.git"
	if _, err := New(cfg, hooks); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{fresh: true, held: true, killed: false, idle: false, oldLayout: false, oldPack: false, newPack: true} {
		if pathExists(dir) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(dir), !want, want)
		}
	}
	after := duBytes(t, filepath.Join(session, cacheDirName))
	t.Logf("git-cache: %d bytes before the start, %d after", before, after)
	if before-after < 4<<20 {
		t.Errorf("the start freed %d bytes, want the three copies' and the old pack's 4 MB", before-after)
	}
}

// waitLocked waits until someone holds path's flock.
func waitLocked(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if pathExists(path) {
			if unlock := (objectCache{dir: strings.TrimSuffix(path, ".lock")}).tryLock(); unlock == nil {
				return
			} else {
				unlock()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nobody locked %s", path)
}
