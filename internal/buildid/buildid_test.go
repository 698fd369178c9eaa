package buildid

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestFromSettings(t *testing.T) {
	cases := []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, ""},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}, "abc123"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}, "abc123-dirty"},
	}
	for _, c := range cases {
		if got := FromSettings(c.settings); got != c.want {
			t.Errorf("FromSettings(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
}

// Different bytes get different ids, the same bytes the same id.
func TestFileHashFollowsTheContent(t *testing.T) {
	dir := t.TempDir()
	a, b, a2 := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "a2")
	for path, content := range map[string]string{a: "build one", b: "build two", a2: "build one"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ha, _ := FileHash(a)
	hb, _ := FileHash(b)
	ha2, _ := FileHash(a2)
	if len(ha) != 12 || ha == hb || ha != ha2 {
		t.Fatalf("FileHash: a=%q b=%q a2=%q", ha, hb, ha2)
	}
	if _, err := FileHash(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("FileHash of a missing file: no error")
	}
}

func TestDefaultNamesThisBinary(t *testing.T) {
	id, err := Default()
	if err != nil || id == "" {
		t.Fatalf("Default() = %q, %v", id, err)
	}
}
