//go:build linux

package toolcache

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func newStore(t *testing.T, maxMB int) *Store {
	t.Helper()
	// As root the copies are farms for uid 65534 (the sandbox's default);
	// otherwise full copies for the worker itself.
	owner := Owner{UID: os.Geteuid(), GID: os.Getegid()}
	if os.Geteuid() == 0 {
		owner = Owner{UID: 65534, GID: 65534, Other: true}
	}
	s, err := New(t.TempDir(), maxMB, owner)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitLine checks a copy out of line, writes files into it and commits it.
func commitLine(t *testing.T, s *Store, line string, files map[string]string) {
	t.Helper()
	c, err := s.Checkout(line, "")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		write(t, filepath.Join(c.Dir, name), data)
	}
	if _, err := c.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckoutCommitRoundTrip(t *testing.T) {
	s := newStore(t, 64)
	c, err := s.Checkout("campaign-a", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Dirs {
		if fi, err := os.Stat(filepath.Join(c.Dir, d)); err != nil || !fi.IsDir() {
			t.Fatalf("an empty line's copy lacks %s: %v", d, err)
		}
	}
	write(t, filepath.Join(c.Dir, "go-build", "ab", "entry-d"), "compiled")
	st, err := c.Commit()
	if err != nil || st.Files != 1 || st.Bytes != int64(len("compiled")) {
		t.Fatalf("Commit = %+v, %v", st, err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Fatalf("the committed copy is still where the command wrote it: %v", err)
	}
	// The next copy holds the entry; another line does not.
	c2, err := s.Checkout("campaign-a", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(c2.Dir, "go-build", "ab", "entry-d"))
	if err != nil || string(got) != "compiled" || c2.From.Files != 1 || c2.Rebuilt != "" {
		t.Fatalf("warm copy: %q, %v, %+v", got, err, c2)
	}
	other, err := s.Checkout("campaign-b", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other.Dir, "go-build", "ab", "entry-d")); !os.IsNotExist(err) {
		t.Fatalf("another line sees campaign-a's cache: %v", err)
	}
	// A copy that is not committed changes nothing.
	write(t, filepath.Join(c2.Dir, "go-build", "cd", "unlanded-d"), "x")
	if err := c2.Remove(); err != nil {
		t.Fatal(err)
	}
	c3, _ := s.Checkout("campaign-a", "")
	if _, err := os.Stat(filepath.Join(c3.Dir, "go-build", "cd", "unlanded-d")); !os.IsNotExist(err) {
		t.Fatalf("an uncommitted copy's write reached the line: %v", err)
	}
}

// A farm's files are the line's own inodes: the commands' uid can neither
// write nor chmod them, and the line is sealed read-only. A worker whose
// commands run as itself gets full copies instead.
func TestFarmLinksAreReadOnly(t *testing.T) {
	s := newStore(t, 64)
	commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/entry-d": "compiled", "go-build/trim.txt": "1"})
	c, err := s.Checkout("campaign-a", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir, "go-build", "ab", "entry-d")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := fi.Sys().(*syscall.Stat_t)
	if !s.Farm() {
		if sys.Nlink != 1 || int(sys.Uid) != os.Geteuid() {
			t.Fatalf("full copy: nlink %d uid %d, want a file of its own", sys.Nlink, sys.Uid)
		}
		return
	}
	if sys.Nlink != 2 || sys.Uid != 0 || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("farm file: nlink %d uid %d mode %v, want a read-only link of the worker's", sys.Nlink, sys.Uid, fi.Mode())
	}
	// Go rewrites trim.txt in place: each copy has its own.
	trim, _ := os.Stat(filepath.Join(c.Dir, "go-build", "trim.txt"))
	if ts := trim.Sys().(*syscall.Stat_t); ts.Nlink != 1 || ts.Uid != 65534 {
		t.Fatalf("trim.txt: nlink %d uid %d, want the command's own copy", ts.Nlink, ts.Uid)
	}
	dir, _ := os.Stat(filepath.Join(c.Dir, "go-build", "ab"))
	if uid := dir.Sys().(*syscall.Stat_t).Uid; uid != 65534 {
		t.Fatalf("a farm directory belongs to uid %d, want the commands' 65534", uid)
	}
}

func TestDamagedLineIsRebuilt(t *testing.T) {
	for name, damage := range map[string]func(line string){
		"marker missing":    func(line string) { os.Remove(filepath.Join(line, marker)) },
		"marker unreadable": func(line string) { os.WriteFile(filepath.Join(line, marker), []byte("{"), 0o644) },
		"file missing":      func(line string) { os.Remove(filepath.Join(line, "go-build", "ab", "one-d")) },
		"file truncated":    func(line string) { os.Truncate(filepath.Join(line, "go-build", "ab", "one-d"), 1) },
		"foreign entry":     func(line string) { os.Symlink("/etc/passwd", filepath.Join(line, "go-build", "ab", "link")) },
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, 64)
			commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/one-d": "first", "go-build/ab/two-d": "second"})
			line, _ := s.lineDir("campaign-a")
			damage(line)
			c, err := s.Checkout("campaign-a", "")
			if err != nil {
				t.Fatal(err)
			}
			if c.Rebuilt == "" {
				t.Fatal("a damaged line was trusted")
			}
			entries, _ := os.ReadDir(filepath.Join(c.Dir, "go-build"))
			if len(entries) != 0 {
				t.Fatalf("the copy of a damaged line holds %d entries, want a cold cache", len(entries))
			}
			if _, err := os.Stat(line); !os.IsNotExist(err) {
				t.Fatalf("the damaged line was kept: %v", err)
			}
		})
	}
}

// Commit keeps nothing that would have the worker change a file elsewhere
// (a second name of it) or follow a link.
func TestCommitDropsLinksAndForeignFiles(t *testing.T) {
	s := newStore(t, 64)
	c, err := s.Checkout("campaign-a", "")
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, outside, "host file")
	if os.Geteuid() == 0 {
		os.Chown(outside, 65534, 65534)
	}
	if err := os.Link(outside, filepath.Join(c.Dir, "go-build", "hard")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(c.Dir, "go-build", "soft"))
	write(t, filepath.Join(c.Dir, "npm", "kept"), "ok")
	st, err := c.Commit()
	if err != nil || st.Files != 1 {
		t.Fatalf("Commit = %+v, %v; want only npm/kept", st, err)
	}
	fi, _ := os.Stat(outside)
	if fi.Mode().Perm() != 0o644 || (os.Geteuid() == 0 && fi.Sys().(*syscall.Stat_t).Uid != 65534) {
		t.Fatalf("Commit changed a file outside the cache: %v", fi.Mode())
	}
}

func TestCommitEvictsOverTheBound(t *testing.T) {
	s := newStore(t, 1)
	c, err := s.Checkout("campaign-a", "")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 400<<10)
	for _, n := range []string{"a", "b", "c", "d"} {
		write(t, filepath.Join(c.Dir, "go-build", n+"-d"), big)
	}
	// A module of the module cache goes whole.
	write(t, filepath.Join(c.Dir, "go-mod", "example.com", "m@v1.0.0", "go.mod"), "module example.com/m\n")
	write(t, filepath.Join(c.Dir, "go-mod", "example.com", "m@v1.0.0", "m.go"), "package m\n")
	st, err := c.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes > s.MaxBytes() {
		t.Fatalf("the line holds %d bytes, over its bound %d", st.Bytes, s.MaxBytes())
	}
	line, _ := s.lineDir("campaign-a")
	_, modErr := os.Stat(filepath.Join(line, "go-mod", "example.com", "m@v1.0.0", "go.mod"))
	_, srcErr := os.Stat(filepath.Join(line, "go-mod", "example.com", "m@v1.0.0", "m.go"))
	if (modErr == nil) != (srcErr == nil) {
		t.Fatalf("a module was evicted in part: go.mod %v, m.go %v", modErr, srcErr)
	}
	// Over the store's bound, the least recently committed line goes.
	commitLine(t, s, "campaign-b", map[string]string{"go-build/big-d": strings.Repeat("y", 900<<10)})
	if _, err := os.Stat(line); !os.IsNotExist(err) {
		t.Fatalf("the store is over its bound and kept the older line: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := New(t.TempDir(), 0, Owner{}); err == nil || !strings.Contains(err.Error(), "RALPH_TOOL_CACHE_MB") {
		t.Fatalf("New(0 MB) = %v, want an error naming RALPH_TOOL_CACHE_MB", err)
	}
	s := newStore(t, 1)
	if _, err := s.Checkout("../x", ""); err == nil {
		t.Fatal("a line name leading out of the store was accepted")
	}
	if got := CampaignLine("a/../b"); strings.ContainsAny(got, "/") {
		t.Fatalf("CampaignLine = %q", got)
	}
}

// Commands that run as the worker itself could chmod a link: their copies
// are full copies, and writing one leaves the line as it was.
func TestFullCopyIsItsOwn(t *testing.T) {
	s, err := New(t.TempDir(), 64, Owner{UID: os.Geteuid(), GID: os.Getegid()})
	if err != nil {
		t.Fatal(err)
	}
	commitLine(t, s, "runs", map[string]string{"pip/wheel": "original"})
	c, err := s.Checkout("runs", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir, "pip", "wheel")
	if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
		t.Fatalf("a full copy shares its file with the line: %v", err)
	}
	if err := os.WriteFile(path, []byte("forged"), 0o644); err != nil {
		t.Fatal(err)
	}
	line, _ := s.lineDir("runs")
	if b, err := os.ReadFile(filepath.Join(line, "pip", "wheel")); err != nil || string(b) != "original" {
		t.Fatalf("writing a full copy changed the line: %q, %v", b, err)
	}
}
