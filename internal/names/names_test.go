package names

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestFlatKeepsPathsApartAndBounded(t *testing.T) {
	long := strings.Repeat(strings.Repeat("p", 250)+"/", 4) + "end" // a 1007-byte workspace CheckWorkspace accepts
	seen := map[string]string{}
	for _, ws := range []string{"repo", "team/repo", "team_repo", ".hidden", "a b", "a_b", long, long + "2"} {
		n := Flat(ws)
		if other, dup := seen[n]; dup {
			t.Errorf("%q and %q share the name %q", ws, other, n)
		}
		if filepath.Base(n) != n || n == "" || n[0] == '.' || len(n) > flatBytes {
			t.Errorf("Flat(%q) = %q is not a bounded plain file name", ws, n)
		}
		seen[n] = ws
	}
	if Flat("repo") != "repo" {
		t.Errorf("a simple name should stay readable")
	}
}

func TestShortenKeepsShortNamesAndCutsAtCodePoints(t *testing.T) {
	if Shorten("fix-tests", MaxNameBytes) != "fix-tests" {
		t.Error("a short name changed")
	}
	long := strings.Repeat("ü", 200) // 400 bytes
	got := Shorten(long, MaxNameBytes)
	if len(got) > MaxNameBytes || !strings.HasPrefix(long, strings.TrimRight(got[:len(got)-hashChars-1], "")) || got == Shorten(long+"x", MaxNameBytes) {
		t.Errorf("Shorten = %q (%d bytes)", got, len(got))
	}
}

// A simple name that looks like a hashed one is hashed too, so a workspace
// named after another's flattened name gets a name of its own.
func TestFlatIsOneToOne(t *testing.T) {
	hashed := Flat("team/repo")
	if !HasHashSuffix(hashed) {
		t.Fatalf("Flat(team/repo) = %q has no hash suffix", hashed)
	}
	if Flat(hashed) == hashed {
		t.Fatalf("the workspace %q shares its derived name with team/repo", hashed)
	}
	if Flat(Flat(hashed)) == Flat(hashed) {
		t.Fatal("hashing again collides")
	}
	for _, ok := range []string{"repo-1", "fix-tests", "x-0123456789ab0", "x-0123456789AB"} {
		if Flat(ok) != ok {
			t.Errorf("Flat(%q) = %q, a plain name should stay readable", ok, Flat(ok))
		}
	}
}
