package gitws

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
)

// parseIndex lists what `git ls-files -s` lists, in version 2 and 3 index
// files (names past the flags' 12-bit length, extended flags, files,
// executables, links and submodules), and refuses version 4 (whose caller
// then asks git).
func TestParseIndexListsWhatLsFilesLists(t *testing.T) {
	dir := t.TempDir()
	testkit.Git(t, dir, "init", "-q")
	blob := testkit.Git(t, dir, "hash-object", "-w", "--stdin")
	long := strings.Repeat("d/", 2100) + "leaf" // 4,204 bytes: past the 0xFFF the flags hold
	for _, e := range []string{"100644,%s,a.txt", "100755,%s,bin/run", "120000,%s,link", "160000,%s,sub",
		"100644,%s," + long, "100644,%s,z/y/x.go"} {
		testkit.Git(t, dir, "update-index", "--add", "--cacheinfo", strings.ReplaceAll(e, "%s", blob))
	}
	index := filepath.Join(dir, ".git", "index")
	listed := func() []indexEntry {
		out := testkit.Git(t, dir, "ls-files", "-s", "-z")
		var want []indexEntry
		for _, rec := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
			meta, name, _ := strings.Cut(rec, "\t")
			mode, err := strconv.ParseUint(strings.Fields(meta)[0], 8, 32)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, indexEntry{mode: uint32(mode), name: name})
		}
		return want
	}
	for _, version := range []string{"2", "3"} {
		testkit.Git(t, dir, "update-index", "--index-version", version)
		if version == "3" {
			testkit.Git(t, dir, "update-index", "--skip-worktree", "a.txt") // an extended flag
		}
		data, err := os.ReadFile(index)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseIndex(data)
		if err != nil {
			t.Fatalf("version %s: %v", version, err)
		}
		if want := listed(); !slices.Equal(got, want) || len(got) != 6 {
			t.Fatalf("version %s: parsed %v, want %v", version, got, want)
		}
	}
	testkit.Git(t, dir, "update-index", "--index-version", "4")
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseIndex(data); err == nil || !strings.Contains(err.Error(), "version 4") {
		t.Fatalf("a version 4 index: %v, want refused", err)
	}
	for _, cut := range []int{0, 11, 40, len(data) / 2} {
		if _, err := parseIndex(data[:cut]); err == nil {
			t.Fatalf("an index cut at %d bytes parsed", cut)
		}
	}
}
