//go:build linux

package toolcache

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func newStore(t *testing.T, maxMB int) *Store {
	t.Helper()
	// As root the copies are overlays or farms for uid 65534 (the
	// sandbox's default); otherwise full copies for the worker itself.
	owner := Owner{UID: os.Geteuid(), GID: os.Getegid()}
	if os.Geteuid() == 0 {
		owner = Owner{UID: 65534, GID: 65534, Other: true}
	}
	root := t.TempDir()
	s, err := New(root, maxMB, owner)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 && s.Overlay() != "" {
		t.Fatalf("a root worker cannot mount overlays: %s", s.Overlay())
	}
	// Like the sandbox (reachable), let the commands' uid reach the work
	// directory, not list anything on the way.
	for _, d := range []string{filepath.Dir(root), root, filepath.Join(root, "work")} {
		os.Chmod(d, 0o711)
	}
	return s
}

// checkout is s.Checkout with the copy removed at the test's end (an
// overlay holds a mount).
func checkout(t *testing.T, s *Store, line, dest string) *Copy {
	t.Helper()
	c, err := s.Checkout(line, dest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Remove() })
	return c
}

// layers lists the line's layer directories, the oldest first.
func layers(t *testing.T, s *Store, line string) []string {
	t.Helper()
	dir, _ := s.lineDir(line)
	got, why := readLine(dir)
	if why != "" {
		t.Fatalf("the line is damaged: %s", why)
	}
	var paths []string
	for _, l := range got {
		paths = append(paths, l.path)
	}
	return paths
}

// topLayer is the line's newest layer.
func topLayer(t *testing.T, s *Store, line string) string {
	t.Helper()
	ls := layers(t, s, line)
	if len(ls) == 0 {
		t.Fatalf("line %s has no layer", line)
	}
	return ls[len(ls)-1]
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
	c := checkout(t, s, line, "")
	for name, data := range files {
		write(t, filepath.Join(c.Dir, name), data)
	}
	if _, err := c.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckoutCommitRoundTrip(t *testing.T) {
	s := newStore(t, 64)
	c := checkout(t, s, "campaign-a", "")
	for _, d := range Dirs {
		if fi, err := os.Stat(filepath.Join(c.Dir, d)); err != nil || !fi.IsDir() {
			t.Fatalf("an empty line's copy lacks %s: %v", d, err)
		}
	}
	write(t, filepath.Join(c.Dir, "go-build", "ab", "entry-d"), "compiled")
	wrote := c.Dir
	st, err := c.Commit()
	if err != nil || st.Files != 1 || st.Bytes != int64(len("compiled")) {
		t.Fatalf("Commit = %+v, %v", st, err)
	}
	if _, err := os.Stat(wrote); !os.IsNotExist(err) {
		t.Fatalf("the committed copy is still where the command wrote it: %v", err)
	}
	// The next copy holds the entry (an overlay of the line, as root);
	// another line does not.
	c2 := checkout(t, s, "campaign-a", "")
	if os.Geteuid() == 0 && c2.ov == nil {
		t.Fatal("a root worker's verify copy is not an overlay")
	}
	got, err := os.ReadFile(filepath.Join(c2.Dir, "go-build", "ab", "entry-d"))
	if err != nil || string(got) != "compiled" || c2.From.Files != 1 || c2.Rebuilt != "" {
		t.Fatalf("warm copy: %q, %v, %+v", got, err, c2)
	}
	other := checkout(t, s, "campaign-b", "")
	if _, err := os.Stat(filepath.Join(other.Dir, "go-build", "ab", "entry-d")); !os.IsNotExist(err) {
		t.Fatalf("another line sees campaign-a's cache: %v", err)
	}
	// A copy that is not committed changes nothing, and leaves no mount.
	write(t, filepath.Join(c2.Dir, "go-build", "cd", "unlanded-d"), "x")
	if err := c2.Remove(); err != nil {
		t.Fatal(err)
	}
	c3 := checkout(t, s, "campaign-a", "")
	if _, err := os.Stat(filepath.Join(c3.Dir, "go-build", "cd", "unlanded-d")); !os.IsNotExist(err) {
		t.Fatalf("an uncommitted copy's write reached the line: %v", err)
	}
	c3.Remove()
	other.Remove()
	if m := mountsUnder(t, s.root); len(m) != 0 {
		t.Fatalf("removed copies left mounts: %v", m)
	}
}

// mountsUnder lists the mount points under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var at []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			at = append(at, f[4])
		}
	}
	return at
}

// runAs runs script as uid 65534 (the commands' uid) and returns what it
// printed.
func runAs(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// Neither a verify's overlay nor the model's farm lets the commands' uid
// change a line's file: not its bytes, mode or time, not by removing it;
// what it writes stays in its copy (SPEC 41's integrity rule).
func TestCommandsCannotWriteTheLine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs a root worker: only under one do commands run as another uid")
	}
	s := newStore(t, 64)
	commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/entry-d": "compiled", "go-build/trim.txt": "1"})
	line := filepath.Join(topLayer(t, s, "campaign-a"), "go-build", "ab", "entry-d")
	before, _ := os.Stat(line)
	for name, dest := range map[string]string{"overlay": "", "farm": filepath.Join(s.root, "work", "model-home")} {
		t.Run(name, func(t *testing.T) {
			c := checkout(t, s, "campaign-a", dest)
			if (c.ov != nil) != (name == "overlay") {
				t.Fatalf("the copy is an overlay: %v", c.ov != nil)
			}
			f := filepath.Join(c.Dir, "go-build", "ab", "entry-d")
			out := runAs(t, `f="`+f+`"; for try in 'echo forged >> "$f"' 'chmod u+w "$f"' 'touch "$f"' 'truncate -s 0 "$f"'; do `+
				`if sh -c "$try" 2>/dev/null; then echo "did: $try"; fi; done; cat "$f"; echo; `+
				`echo mine > "`+filepath.Join(c.Dir, "go-build", "ab", "own-d")+`" && echo own-ok; rm -f "$f" && echo removed`)
			if strings.Contains(out, "did:") || !strings.Contains(out, "compiled\n") || !strings.Contains(out, "own-ok") {
				t.Fatalf("the commands' uid through its %s copy: %q", name, out)
			}
			after, err := os.Stat(line)
			if b, _ := os.ReadFile(line); err != nil || string(b) != "compiled" || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
				t.Fatalf("the line's file after the %s copy's commands: %q, %v, %v", name, b, after.Mode(), err)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(line), "own-d")); !os.IsNotExist(err) {
				t.Fatalf("the %s copy's own write reached the line: %v", name, err)
			}
		})
	}
}

func TestDamagedLineIsRebuilt(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, s *Store){
		"marker missing": func(t *testing.T, s *Store) { os.Remove(filepath.Join(topLayer(t, s, "campaign-a"), marker)) },
		"marker unreadable": func(t *testing.T, s *Store) {
			os.WriteFile(filepath.Join(topLayer(t, s, "campaign-a"), marker), []byte("{"), 0o644)
		},
		"file missing": func(t *testing.T, s *Store) {
			os.Remove(filepath.Join(topLayer(t, s, "campaign-a"), "go-build", "ab", "one-d"))
		},
		"file truncated": func(t *testing.T, s *Store) {
			os.Truncate(filepath.Join(topLayer(t, s, "campaign-a"), "go-build", "ab", "one-d"), 1)
		},
		"foreign entry": func(t *testing.T, s *Store) {
			os.Symlink("/etc/passwd", filepath.Join(topLayer(t, s, "campaign-a"), "go-build", "ab", "link"))
		},
		"not a layer": func(t *testing.T, s *Store) {
			dir, _ := s.lineDir("campaign-a")
			write(t, filepath.Join(dir, "go-build", "ab", "one-d"), "first") // the caches directly in the line, as before layers
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, 64)
			commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/one-d": "first", "go-build/ab/two-d": "second"})
			damage(t, s)
			for _, dest := range []string{"", filepath.Join(t.TempDir(), "model")} {
				c := checkout(t, s, "campaign-a", dest)
				if c.Rebuilt == "" {
					t.Fatalf("a damaged line was trusted (dest %q)", dest)
				}
				entries, _ := os.ReadDir(filepath.Join(c.Dir, "go-build"))
				if len(entries) != 0 {
					t.Fatalf("the copy of a damaged line holds %d entries, want a cold cache", len(entries))
				}
				line, _ := s.lineDir("campaign-a")
				if _, err := os.Stat(line); !os.IsNotExist(err) {
					t.Fatalf("the damaged line was kept: %v", err)
				}
				commitLine(t, s, "campaign-a", map[string]string{"go-build/ab/one-d": "first", "go-build/ab/two-d": "second"})
				damage(t, s)
			}
		})
	}
}

// Commit keeps nothing that would have the worker change a file elsewhere
// (a second name of it) or follow a link.
func TestCommitDropsLinksAndForeignFiles(t *testing.T) {
	s := newStore(t, 64)
	commitLine(t, s, "campaign-a", map[string]string{"pip/base": "b"})
	for _, dest := range []string{"", filepath.Join(t.TempDir(), "model")} {
		c := checkout(t, s, "campaign-a", dest)
		outside := filepath.Join(t.TempDir(), "outside")
		write(t, outside, "host file")
		if os.Geteuid() == 0 {
			os.Chown(outside, 65534, 65534)
		}
		// An overlay refuses a link from another file system; a farm takes it.
		if err := os.Link(outside, filepath.Join(c.Dir, "go-build", "hard")); err != nil && (c.ov == nil || !errors.Is(err, syscall.EXDEV)) {
			t.Fatal(err)
		}
		os.Symlink(outside, filepath.Join(c.Dir, "go-build", "soft"))
		write(t, filepath.Join(c.Dir, "npm", "kept"), "ok")
		st, err := c.Commit()
		if err != nil || st.Files != 2 {
			t.Fatalf("Commit = %+v, %v; want only pip/base and npm/kept", st, err)
		}
		fi, _ := os.Stat(outside)
		if fi.Mode().Perm() != 0o644 || (os.Geteuid() == 0 && fi.Sys().(*syscall.Stat_t).Uid != 65534) {
			t.Fatalf("Commit changed a file outside the cache: %v", fi.Mode())
		}
	}
}

func TestCommitEvictsOverTheBound(t *testing.T) {
	s := newStore(t, 1)
	c := checkout(t, s, "campaign-a", "")
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
	top := topLayer(t, s, "campaign-a")
	_, modErr := os.Stat(filepath.Join(top, "go-mod", "example.com", "m@v1.0.0", "go.mod"))
	_, srcErr := os.Stat(filepath.Join(top, "go-mod", "example.com", "m@v1.0.0", "m.go"))
	if (modErr == nil) != (srcErr == nil) {
		t.Fatalf("a module was evicted in part: go.mod %v, m.go %v", modErr, srcErr)
	}
	// Over the store's bound, the least recently committed line goes.
	commitLine(t, s, "campaign-b", map[string]string{"go-build/big-d": strings.Repeat("y", 900<<10)})
	line, _ := s.lineDir("campaign-a")
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
// are full copies (or overlays), and writing one leaves the line as it was.
func TestFullCopyIsItsOwn(t *testing.T) {
	s, err := New(t.TempDir(), 64, Owner{UID: os.Geteuid(), GID: os.Getegid()})
	if err != nil {
		t.Fatal(err)
	}
	commitLine(t, s, "runs", map[string]string{"pip/wheel": "original"})
	for _, dest := range []string{"", filepath.Join(t.TempDir(), "model")} {
		c := checkout(t, s, "runs", dest)
		path := filepath.Join(c.Dir, "pip", "wheel")
		if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
			t.Fatalf("a full copy shares its file with the line: %v", err)
		}
		if err := os.WriteFile(path, []byte("forged"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(topLayer(t, s, "runs"), "pip", "wheel")); err != nil || string(b) != "original" {
			t.Fatalf("writing a copy (dest %q) changed the line: %q, %v", dest, b, err)
		}
	}
}
