package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/devenv/serverproc"
)

// The Temporal server build the cluster runs; the CLI of the dev server
// (devenv/devserver) embeds the same server version.
const (
	ServerModule  = "go.temporal.io/server"
	ServerVersion = "v1.29.1"
	serverPkg     = ServerModule + "/cmd/server"
	sqlToolPkg    = ServerModule + "/cmd/tools/sql"
	// buildLockPoll is how often a waiting build retries the cache lock.
	buildLockPoll = 500 * time.Millisecond
)

// Binaries are the built server and its SQL schema tool.
type Binaries struct {
	Server  string // temporal-server
	SQLTool string // temporal-sql-tool
}

// BinDir is where EnsureBinaries caches the binaries under cacheDir.
func BinDir(cacheDir string) string {
	return filepath.Join(cacheDir, "temporal-server-"+ServerVersion, "bin")
}

// EnsureBinaries returns the cached binaries, building them with `go
// install` first when either is missing (several minutes on empty Go
// caches). A lock in cacheDir makes parallel callers build once.
func EnsureBinaries(ctx context.Context, cacheDir string, output io.Writer) (Binaries, error) {
	dir := BinDir(cacheDir)
	bins := Binaries{Server: filepath.Join(dir, "temporal-server"), SQLTool: filepath.Join(dir, "temporal-sql-tool")}
	if bins.present() {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return bins, fmt.Errorf("create the binary cache %s: %w", dir, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(cacheDir, ".temporal-build.lock"))
	if err != nil {
		return bins, err
	}
	defer unlock()
	if bins.present() { // built by another process while this one waited
		return bins, nil
	}
	tmp, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return bins, fmt.Errorf("create a build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if output != nil {
		fmt.Fprintf(output, "cluster: building Temporal server %s and its SQL tool into %s (minutes on empty Go caches)\n", ServerVersion, dir)
	}
	cmd := exec.CommandContext(ctx, "go", "install", serverPkg+"@"+ServerVersion, sqlToolPkg+"@"+ServerVersion)
	// Outside this module, with nothing of its settings: the server's own
	// go.mod decides.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off", "GO111MODULE=on")
	out := output
	if out == nil {
		out = io.Discard
	}
	tail := serverproc.NewTail(8 << 10)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, tail), io.MultiWriter(out, tail)
	if err := cmd.Run(); err != nil {
		return bins, fmt.Errorf("go install Temporal server %s: %w\n%s", ServerVersion, err, tail)
	}
	for from, to := range map[string]string{"server": bins.Server, "sql": bins.SQLTool} {
		if err := os.Rename(filepath.Join(tmp, from), to); err != nil {
			return bins, fmt.Errorf("cache the built %s: %w", from, err)
		}
	}
	return bins, nil
}

func (b Binaries) present() bool { return isExecutable(b.Server) && isExecutable(b.SQLTool) }

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// lockFile takes an exclusive flock on path, polling so ctx can end the wait.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the build lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the build lock %s: %w", path, ctx.Err())
		case <-time.After(buildLockPoll):
		}
	}
}
