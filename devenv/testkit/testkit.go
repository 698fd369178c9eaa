// Package testkit holds the helpers tests share across packages: running
// git as a person would, a buffer several goroutines write, fixture files,
// the cgroup requirement, generated blocks of docs kept equal to their
// source, processes (pid files, stand-in workers to kill -9) and a host
// listener that counts the connections it gets. Of this module it imports
// only internal/cgroup and internal/wait (whose own tests do not use it), so
// the tests of any other package, down to internal/, can use it. Temporal
// server helpers live in devenv/temporalserver.
package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/internal/cgroup"
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

// WriteFiles writes files (path relative to dir → content) under dir,
// creating the directories they need.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// RequireCgroups fails in CI (root, writable cgroups), where limiting
// memory and pids must work, and skips elsewhere when this machine cannot.
func RequireCgroups(t testing.TB) {
	t.Helper()
	m, why := cgroup.Detect(cgroup.Limits{MemoryBytes: 1 << 30, Pids: 100})
	if len(m.Enforced()) == 2 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI must be able to limit memory and pids: %s", why)
	}
	t.Skipf("cannot limit memory and pids here: %s", why)
}

// GeneratedBlock keeps the text between the markers begin and end in the
// file at path equal to want, the block's generated content: with update
// it rewrites the block, otherwise a difference fails the test and names
// regenerate, the command that rewrites it.
func GeneratedBlock(t testing.TB, path, begin, end, want string, update bool, regenerate string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start, stop := strings.Index(text, begin), strings.Index(text, end)
	if start < 0 || stop < start {
		t.Fatalf("%s lacks the generated block's markers %q ... %q", path, begin, end)
	}
	if text[start+len(begin):stop] == want {
		return
	}
	if update {
		if err := os.WriteFile(path, []byte(text[:start+len(begin)]+want+text[stop:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the generated block of %s differs from its source; run\n  %s\nwant:\n%s", path, regenerate, want)
}
