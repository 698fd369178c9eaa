package temporalserver

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/wait"
)

// The pinned builds. The CLI's dev server embeds the same Temporal server
// version the cluster runs.
const (
	CLIModule     = "github.com/temporalio/cli/cmd/temporal"
	CLIVersion    = "v1.5.1"
	cliMainModule = "github.com/temporalio/cli"
	ServerModule  = "go.temporal.io/server"
	ServerVersion = "v1.29.1"
)

// Environment variables of the installer.
const (
	// EnvCache is the cache root of the built binaries.
	EnvCache = "RALPH_CACHE"
	// EnvTemporalBin names a temporal CLI to use instead of the cached
	// build; it must report version CLIVersion.
	EnvTemporalBin = "RALPH_TEMPORAL_BIN"
)

// installLockPoll is how often a waiting install retries the cache lock.
const installLockPoll = 500 * time.Millisecond

// build is one pinned set of Go binaries that `go install` puts into the
// cache: package path (without @version) to the file name it gets there.
type build struct {
	name    string // directory prefix in the cache and what messages call it
	version string
	bins    map[string]string
}

var (
	cliBuild    = build{name: "temporal-cli", version: CLIVersion, bins: map[string]string{CLIModule: "temporal"}}
	serverBuild = build{name: "temporal-server", version: ServerVersion, bins: map[string]string{
		ServerModule + "/cmd/server":    "temporal-server",
		ServerModule + "/cmd/tools/sql": "temporal-sql-tool",
	}}
)

// DefaultCacheDir is $RALPH_CACHE, else Ralph's directory in the user's
// cache (~/.cache/ralph): never the global GOBIN, and never a binary that
// merely happens to be on PATH.
func DefaultCacheDir() string {
	if dir := os.Getenv(EnvCache); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "ralph")
	}
	return filepath.Join(os.TempDir(), "ralph-cache")
}

// BinDir is where a build's binaries live under cacheDir: the version is
// part of the path, so a different pin is a different directory.
func (b build) BinDir(cacheDir string) string {
	return filepath.Join(cacheDir, b.name+"-"+b.version, "bin")
}

func (b build) present(cacheDir string) bool {
	for _, name := range b.bins {
		if !isExecutable(filepath.Join(b.BinDir(cacheDir), name)) {
			return false
		}
	}
	return true
}

// ensure returns the build's directory, installing it first when a binary
// is missing (minutes on empty Go caches). A lock in cacheDir makes
// parallel callers install once.
func (b build) ensure(ctx context.Context, cacheDir string, output io.Writer) (string, error) {
	dir := b.BinDir(cacheDir)
	if b.present(cacheDir) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the binary cache %s: %w", dir, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(cacheDir, ".install.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if b.present(cacheDir) { // installed by another process while this one waited
		return dir, nil
	}
	tmp, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return "", fmt.Errorf("create a build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if output != nil {
		fmt.Fprintf(output, "installing %s %s into %s (minutes on empty Go caches)\n", b.name, b.version, dir)
	}
	args := []string{"install"}
	for pkg := range b.bins {
		args = append(args, pkg+"@"+b.version)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	// Outside this module, with nothing of its settings: the pinned
	// module's own go.mod decides.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off", "GO111MODULE=on")
	out := output
	if out == nil {
		out = io.Discard
	}
	tail := NewTail(8 << 10)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, tail), io.MultiWriter(out, tail)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail)
	}
	for pkg, name := range b.bins {
		if err := os.Rename(filepath.Join(tmp, path.Base(pkg)), filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("cache the built %s: %w", name, err)
		}
	}
	return dir, nil
}

// CLIInstalled reports whether the pinned CLI is in the cache (or named by
// RALPH_TEMPORAL_BIN), so EnsureCLI will not build it.
func CLIInstalled() bool {
	return os.Getenv(EnvTemporalBin) != "" || cliBuild.present(DefaultCacheDir())
}

// EnsureCLI returns the temporal CLI of version CLIVersion: the one
// RALPH_TEMPORAL_BIN names (checked to report that version), else the
// cached build, installed from the Go module proxy first when missing.
func EnsureCLI(ctx context.Context, output io.Writer) (string, error) {
	if bin := os.Getenv(EnvTemporalBin); bin != "" {
		return bin, checkCLIVersion(ctx, bin)
	}
	dir, err := cliBuild.ensure(ctx, DefaultCacheDir(), output)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "temporal"), nil
}

// checkCLIVersion wants bin to be the pinned CLI: built from the module
// github.com/temporalio/cli at CLIVersion (what `go install` records), or
// answering --version with it (what a release build prints; a `go install`
// build prints 0.0.0-DEV).
func checkCLIVersion(ctx context.Context, bin string) error {
	if !isExecutable(bin) {
		return fmt.Errorf("%s=%q is not an executable file", EnvTemporalBin, bin)
	}
	built := "no Go build information"
	if info, err := buildinfo.ReadFile(bin); err == nil {
		if info.Main.Path == cliMainModule && info.Main.Version == CLIVersion {
			return nil
		}
		built = "built from " + info.Main.Path + "@" + info.Main.Version
	}
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	said, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err == nil && strings.HasPrefix(said+" ", "temporal version "+strings.TrimPrefix(CLIVersion, "v")+" ") {
		return nil
	}
	return fmt.Errorf("%s=%q is not the pinned temporal CLI %s (%s; --version says %q); unset %s to use the cached build",
		EnvTemporalBin, bin, CLIVersion, built, said, EnvTemporalBin)
}

// ServerBinaries are the built server and its SQL schema tool.
type ServerBinaries struct {
	Server  string // temporal-server
	SQLTool string // temporal-sql-tool
}

// ServerBinDir is where EnsureServer caches the binaries under cacheDir.
func ServerBinDir(cacheDir string) string { return serverBuild.BinDir(cacheDir) }

// EnsureServer returns the cached server binaries of ServerVersion,
// installing them first when either is missing.
func EnsureServer(ctx context.Context, cacheDir string, output io.Writer) (ServerBinaries, error) {
	dir, err := serverBuild.ensure(ctx, cacheDir, output)
	if err != nil {
		return ServerBinaries{}, err
	}
	return ServerBinaries{Server: filepath.Join(dir, "temporal-server"), SQLTool: filepath.Join(dir, "temporal-sql-tool")}, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// lockFile takes an exclusive flock on path, waiting while another process
// holds it; ctx ends the wait.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the install lock: %w", err)
	}
	err = wait.Until(ctx, installLockPoll, func(context.Context) error {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return wait.Final(err)
		}
		return err
	})
	var timedOut *wait.TimedOut
	if errors.As(err, &timedOut) {
		err = fmt.Errorf("another install holds it: %w", timedOut.Ctx)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
