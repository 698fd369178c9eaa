package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestGitCommitsAsAPerson(t *testing.T) {
	dir := t.TempDir()
	Git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "f")
	Git(t, dir, "commit", "-q", "-m", "first")
	if got := Git(t, dir, "log", "--format=%an <%ae> / %cn: %s"); got != "Person <person@example.com> / Person: first" {
		t.Fatalf("log = %q", got)
	}
	// A directory inside the repository belongs to it.
	sub := filepath.Join(dir, "sub", "deeper")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := Git(t, sub, "rev-parse", "--is-inside-work-tree"); out != "true" {
		t.Fatalf("inside the work tree: %q", out)
	}
}

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				fmt.Fprintf(&b, "%d-%d\n", i, j)
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
}
