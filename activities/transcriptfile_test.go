package activities

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Lines written while the file is still being created reach it, in order,
// before close returns.
func TestTranscriptFileKeepsEarlyLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "round-1.jsonl")
	f := createTranscriptFile(path)
	var want strings.Builder
	for _, line := range []string{"a\n", "b\n", "c\n"} {
		if n, err := f.Write([]byte(line)); err != nil || n != len(line) {
			t.Fatalf("Write(%q) = %d, %v", line, n, err)
		}
		want.WriteString(line)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Errorf("file holds %q, want %q", got, want.String())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != transcriptFilePerm {
		t.Errorf("file mode %v (%v), want %v", fi.Mode().Perm(), err, os.FileMode(transcriptFilePerm))
	}
}

// A transcript never replaces an existing file, and says so.
func TestTranscriptFileRefusesAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "round-1.jsonl")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := createTranscriptFile(path)
	f.Write([]byte("later\n"))
	err := f.close()
	if err == nil || !strings.Contains(err.Error(), "create the transcript") {
		t.Errorf("close() = %v, want the creation error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "earlier\n" {
		t.Errorf("the existing file now holds %q", got)
	}
	if _, err := f.Write([]byte("more\n")); err == nil {
		t.Error("a write after a failed creation succeeded")
	}
}
