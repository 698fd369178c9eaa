// Package testkit holds the helpers tests share across packages: running
// git as a person would, and a buffer several goroutines write. It imports
// nothing of this module, so the tests of any package, down to internal/,
// can use it. (Temporal server helpers live in devenv/temporalserver.)
package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Person is the author and committer of the commits Git makes.
const (
	PersonName  = "Person"
	PersonEmail = "person@example.com"
)

// Git runs the real git in dir as a person would (author and committer
// Person) and returns its trimmed output; a failure ends the test with
// git's output. No repository at or above the temp directory is ever taken
// for the test's.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME="+PersonName, "GIT_AUTHOR_EMAIL="+PersonEmail,
		"GIT_COMMITTER_NAME="+PersonName, "GIT_COMMITTER_EMAIL="+PersonEmail,
		"GIT_CEILING_DIRECTORIES="+filepath.Clean(os.TempDir()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Buffer is a bytes.Buffer that several goroutines (a process's stdout and
// stderr, a logger) may write at once while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
