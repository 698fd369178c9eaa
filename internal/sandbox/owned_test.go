package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestOwnSkipsOnlyUnchangedDirectories: a second walk trusts a settled
// directory whose stamp is unchanged (a file the worker chowned back to
// itself there stays the worker's: the one change the cache does not see,
// and it only withholds a file), and looks at every entry again once the
// directory gains one, at any depth.
func TestOwnSkipsOnlyUnchangedDirectories(t *testing.T) {
	f := newFixture(t)
	sb, err := New(context.Background(), Config{Mode: ModeBwrap, Network: NetHost}, f.paths)
	if err != nil {
		t.Fatal(err)
	}
	if !sb.id.drop {
		t.Fatal("the worker must run as root for this test: commands run as an unprivileged uid only then")
	}
	ws := filepath.Join(f.root, "ws")
	deep := filepath.Join(ws, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(deep, "old.txt")
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Let the directories' ctimes settle (not a timing assertion: before it
	// a walk must not trust them, which the first Own below checks too).
	time.Sleep(2 * ctimeSettleFine)
	if err := sb.Own(ws); err != nil {
		t.Fatal(err)
	}
	assertOwner(t, old, sb.id.uid)
	time.Sleep(2 * ctimeSettleFine)
	if err := sb.Own(ws); err != nil { // records settled stamps
		t.Fatal(err)
	}
	if err := os.Lchown(old, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := sb.Own(ws); err != nil {
		t.Fatal(err)
	}
	assertOwner(t, old, 0)
	added := filepath.Join(deep, "new.txt")
	if err := os.WriteFile(added, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sb.Own(ws); err != nil {
		t.Fatal(err)
	}
	assertOwner(t, added, sb.id.uid)
	assertOwner(t, old, sb.id.uid)
}

// TestOwnTrustsNoFreshDirectory: a directory changed less than the settle
// time before the walk (an hour here) is not trusted by the next one,
// whatever its stamp.
func TestOwnTrustsNoFreshDirectory(t *testing.T) {
	f := newFixture(t)
	sb, err := New(context.Background(), Config{Mode: ModeBwrap, Network: NetHost}, f.paths)
	if err != nil {
		t.Fatal(err)
	}
	sb.owned.fine = time.Hour
	ws := filepath.Join(f.root, "ws")
	file := filepath.Join(ws, "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := sb.Own(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(file, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := sb.Own(ws); err != nil {
		t.Fatal(err)
	}
	assertOwner(t, file, sb.id.uid)
}

func assertOwner(t *testing.T, path string, uid int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != uid {
		t.Errorf("%s is owned by uid %d, want %d", path, st.Uid, uid)
	}
}

// BenchmarkOwn walks a settled workspace of 2,000 directories and 20,000
// files, the cache on (trusted) and off (every entry Lstat'ed).
func BenchmarkOwn(b *testing.B) {
	f := newFixture(&testing.T{})
	sb, err := New(context.Background(), Config{Mode: ModeBwrap, Network: NetHost}, f.paths)
	if err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(f.root, "ws")
	for d := range 2000 {
		dir := filepath.Join(ws, "d"+string(rune('a'+d%26)), "e"+strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range 10 {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	time.Sleep(2 * ctimeSettleFine)
	for _, c := range []struct {
		name  string
		owned *ownedDirs
	}{{"trusted", &ownedDirs{fine: ctimeSettleFine}}, {"uncached", nil}} {
		b.Run(c.name, func(b *testing.B) {
			sb.owned = c.owned
			for b.Loop() {
				if err := sb.Own(ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
