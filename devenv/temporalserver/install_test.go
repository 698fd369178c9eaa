package temporalserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeCLI writes an executable that answers --version with version.
func fakeCLI(t *testing.T, dir, version string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "temporal")
	script := "#!/bin/sh\necho 'temporal version " + version + " (Server 1.29.1, UI 2.41.0)'\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// A temporal CLI on PATH is never taken: the cached build of the pin is.
func TestEnsureCLIIgnoresPATH(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(EnvCache, cache)
	t.Setenv(EnvTemporalBin, "")
	onPath := t.TempDir()
	fakeCLI(t, onPath, "1.5.1")
	t.Setenv("PATH", onPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	cached := fakeCLI(t, cliBuild.BinDir(cache), "1.5.1")
	if !strings.Contains(cached, "temporal-cli-"+CLIVersion) {
		t.Fatalf("cache path %s does not name the pinned version", cached)
	}
	got, err := EnsureCLI(context.Background(), nil)
	if err != nil || got != cached {
		t.Fatalf("EnsureCLI = %q, %v; want the cached %q", got, err, cached)
	}
	if !CLIInstalled() {
		t.Error("CLIInstalled is false with the cached build present")
	}
}

// RALPH_TEMPORAL_BIN must report the pinned version.
func TestExplicitCLIMustBeThePin(t *testing.T) {
	t.Setenv(EnvCache, t.TempDir())
	old := fakeCLI(t, t.TempDir(), "1.4.0")
	t.Setenv(EnvTemporalBin, old)
	_, err := EnsureCLI(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "1.4.0") || !strings.Contains(err.Error(), CLIVersion) {
		t.Fatalf("a 1.4.0 CLI: err = %v", err)
	}
	pinned := fakeCLI(t, t.TempDir(), strings.TrimPrefix(CLIVersion, "v"))
	t.Setenv(EnvTemporalBin, pinned)
	if got, err := EnsureCLI(context.Background(), nil); err != nil || got != pinned {
		t.Fatalf("the pinned CLI: %q, %v", got, err)
	}
	t.Setenv(EnvTemporalBin, filepath.Join(t.TempDir(), "none"))
	if _, err := EnsureCLI(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Fatalf("a missing CLI: err = %v", err)
	}
}

// Parallel installs take turns on the cache lock, and one that waited uses
// what the other installed instead of building again.
func TestInstallWaitsForTheLockAndBuildsOnce(t *testing.T) {
	cache := t.TempDir()
	// A package that cannot be installed: if ensure ran go install, it would fail.
	b := build{name: "fake", version: "v0.0.1", bins: map[string]string{"example.invalid/none": "none"}}
	unlock, err := lockFile(context.Background(), filepath.Join(cache, ".install.lock"))
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := b.ensure(short, cache, nil); err == nil || !strings.Contains(err.Error(), "another install holds it") {
		t.Fatalf("ensure while locked: err = %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.ensure(context.Background(), cache, nil)
		done <- err
	}()
	// The other process finishes its install, then releases the lock.
	if err := os.WriteFile(filepath.Join(b.BinDir(cache), "none"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("ensure after the other install: %v", err)
	}
}
