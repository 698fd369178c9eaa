package historyfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A small history is written plain, a large one gzipped, and Read gives
// back the JSON of either.
func TestWriteAndReadKeepTheRecordedJSON(t *testing.T) {
	dir := t.TempDir()
	small := []byte(`{"events":[]}` + "\n")
	large := bytes.Repeat([]byte(`{"eventId":"1"},`), MaxPlain/8)
	if err := Write(filepath.Join(dir, "a.json"), small); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "b.json"), large); err != nil {
		t.Fatal(err)
	}
	plain, zipped := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json.gz")
	if fi, err := os.Stat(zipped); err != nil || fi.Size() > MaxPlain {
		t.Fatalf("the large history is not kept gzipped under 1 MB: %v, %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.json")); err == nil {
		t.Error("the large history was also written plain")
	}
	for _, tc := range []struct {
		path, name string
		want       []byte
	}{{plain, "a.json", small}, {zipped, "b.json", large}} {
		got, err := Read(tc.path)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("Read(%s): %d bytes, %v; want %d bytes", tc.path, len(got), err, len(tc.want))
		}
		if n := Name(tc.path); n != tc.name {
			t.Errorf("Name(%s) = %q, want %q", tc.path, n, tc.name)
		}
	}
	broken := filepath.Join(dir, "c.json.gz")
	os.WriteFile(broken, small, 0o644) // not gzip
	if _, err := Read(broken); err == nil {
		t.Error("Read of a .gz that is not gzip succeeded")
	}
}
