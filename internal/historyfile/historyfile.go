// Package historyfile reads the replay corpus's recorded histories
// (workflows/testdata/histories). A history is kept as <name>.json, or,
// over 1 MB, gzipped as <name>.json.gz; either way its manifest line names
// <name>.json with the SHA-256 of the JSON it holds, so the stored form can
// change without rewriting what was recorded.
package historyfile

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxPlain is the size above which a history is kept gzipped: the
// repository tracks no file over 1 MB.
const MaxPlain = 1 << 20

// Write keeps the recorded JSON data as path (<name>.json), or gzipped as
// path+".gz" when it is over MaxPlain.
func Write(path string, data []byte) error {
	if len(data) <= MaxPlain {
		return os.WriteFile(path, data, 0o644)
	}
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression) // a valid level never errs
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path+".gz", z.Bytes(), 0o644)
}

// Read is the recorded JSON of the history file path.
func Read(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if data, err = io.ReadAll(zr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// Name is the name the manifest gives the history file path.
func Name(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".gz")
}
