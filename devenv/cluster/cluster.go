// Package cluster runs a production-style Temporal cluster on this machine
// without Docker, for the real-stack suite, the benchmarks and
// cmd/ralph-cluster: Debian's PostgreSQL 15 plus the full Temporal server
// (frontend, history, matching and worker in one process) built from the Go
// module proxy, the namespace and Ralph's search attributes registered,
// every port on 127.0.0.1, everything in one state directory that Stop
// removes. Its Server has the method set of devenv/devserver's.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/serverproc"
)

// Environment variables that override the defaults below.
const (
	EnvCache = "RALPH_CACHE"  // cache root of the built server binaries
	EnvPGBin = "RALPH_PG_BIN" // PostgreSQL's bin directory
)

// Defaults.
const (
	DefaultNamespace    = "default"
	DefaultPGBin        = "/usr/lib/postgresql/15/bin"
	DefaultLogLevel     = "warn"
	DefaultStartTimeout = 2 * time.Minute
	// StopGrace is how long the server and PostgreSQL get after their
	// shutdown signal before SIGKILL.
	StopGrace = 20 * time.Second
	// portsFreeWithin bounds how long a restart waits for the stopped
	// server's ports to be released.
	portsFreeWithin = 10 * time.Second
	// namespaceRetention is the registered namespace's history retention.
	namespaceRetention = 24 * time.Hour
	// dbUser and dbPassword are the throwaway database's only login.
	dbUser     = "temporal"
	dbPassword = "temporal"
)

// Options configure Start. The zero value is a usable cluster.
type Options struct {
	// Dir is the state directory to create (absent or empty); empty means a
	// new directory under the system temp dir.
	Dir string
	// Keep leaves the state directory in place after Stop (for debugging).
	Keep bool
	// CacheDir holds the built binaries (default $RALPH_CACHE, else
	// ~/.cache/ralph).
	CacheDir string
	// PGBin is PostgreSQL's bin directory (default $RALPH_PG_BIN, else
	// DefaultPGBin).
	PGBin string
	// Namespace to register (default DefaultNamespace).
	Namespace string
	// LogLevel of the Temporal server (default DefaultLogLevel).
	LogLevel string
	// Durable keeps PostgreSQL's fsync on; off by default, since the
	// database is thrown away.
	Durable bool
	// Output receives the build's, PostgreSQL's and the server's output
	// (default: discarded; the tails are kept for error messages).
	Output io.Writer
	// StartTimeout bounds each wait for readiness (default DefaultStartTimeout).
	StartTimeout time.Duration
}

// Server is a running cluster: PostgreSQL and the Temporal server.
type Server struct {
	// Address is the frontend gRPC host:port, for TEMPORAL_ADDRESS.
	Address string
	// Namespace is the registered namespace.
	Namespace string
	// HTTPAddress is the frontend's HTTP API; MetricsAddress serves
	// Prometheus /metrics.
	HTTPAddress    string
	MetricsAddress string
	// PostgresURL reaches the Temporal database.
	PostgresURL string
	// Dir is the state directory.
	Dir string

	opts  Options
	bins  Binaries
	ports ports
	pg    *postgres
	args  []string
	env   []string

	mu      sync.Mutex
	proc    *serverproc.Process
	stopped bool
}

// Start builds the server binaries when they are not cached, initialises
// and starts PostgreSQL, applies the schema, starts the Temporal server and
// waits until it serves the namespace with Ralph's search attributes. On
// failure nothing is left running.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts = withDefaults(opts)
	bins, err := EnsureBinaries(ctx, opts.CacheDir, opts.Output)
	if err != nil {
		return nil, err
	}
	dir, err := stateDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{Namespace: opts.Namespace, Dir: dir, opts: opts, bins: bins}
	if err := s.setUp(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func withDefaults(opts Options) Options {
	if opts.CacheDir == "" {
		opts.CacheDir = DefaultCacheDir()
	}
	if opts.PGBin == "" {
		opts.PGBin = os.Getenv(EnvPGBin)
	}
	if opts.PGBin == "" {
		opts.PGBin = DefaultPGBin
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.LogLevel == "" {
		opts.LogLevel = DefaultLogLevel
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	return opts
}

// DefaultCacheDir is $RALPH_CACHE, else ~/.cache/ralph.
func DefaultCacheDir() string {
	if dir := os.Getenv(EnvCache); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "ralph")
	}
	return filepath.Join(os.TempDir(), "ralph-cache")
}

// stateDir creates the state directory; the postgres user must be able to
// reach its pg/ subdirectory, hence 0755.
func stateDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "ralph-cluster-")
		if err != nil {
			return "", fmt.Errorf("create the cluster state directory: %w", err)
		}
		dir = d
	} else {
		entries, err := os.ReadDir(dir)
		if err == nil && len(entries) > 0 {
			return "", fmt.Errorf("cluster state directory %s is not empty", dir)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("cluster state directory %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create the cluster state directory: %w", err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cluster state directory %s: %w", dir, err)
	}
	if err := os.Chmod(abs, 0o755); err != nil {
		return "", fmt.Errorf("cluster state directory %s: %w", abs, err)
	}
	return abs, nil
}

func (s *Server) setUp(ctx context.Context) error {
	p, err := pickPorts()
	if err != nil {
		return err
	}
	s.ports = p
	s.Address = p.addr(p.frontend)
	s.HTTPAddress = p.addr(p.http)
	s.MetricsAddress = p.addr(p.metrics)
	s.PostgresURL = fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/temporal?sslmode=disable", dbUser, dbPassword, p.postgres)
	s.pg, err = startPostgres(ctx, postgresConfig{
		bin: s.opts.PGBin, dir: filepath.Join(s.Dir, "pg"), port: p.postgres,
		durable: s.opts.Durable, output: s.opts.Output, timeout: s.opts.StartTimeout,
	})
	if err != nil {
		return err
	}
	if err := setUpSchema(ctx, s.bins.SQLTool, p.postgres, s.opts.Output); err != nil {
		return err
	}
	if err := s.writeConfig(); err != nil {
		return err
	}
	if err := s.start(ctx, s.healthy); err != nil {
		return err
	}
	return s.register(ctx)
}

// Dial returns a client for the cluster's namespace; opts.HostPort and
// opts.Namespace are filled in when empty, and the SDK's logs are dropped
// unless opts.Logger is set.
func (s *Server) Dial(ctx context.Context, opts client.Options) (client.Client, error) {
	if opts.Logger == nil {
		opts.Logger = serverproc.QuietLogger{}
	}
	if opts.HostPort == "" {
		opts.HostPort = s.Address
	}
	if opts.Namespace == "" {
		opts.Namespace = s.Namespace
	}
	return client.DialContext(ctx, opts)
}

// Env is the environment a worker or starter needs to reach this cluster.
func (s *Server) Env() []string {
	return []string{"TEMPORAL_ADDRESS=" + s.Address, "TEMPORAL_NAMESPACE=" + s.Namespace}
}

// Args is the Temporal server's command line (without the binary).
func (s *Server) Args() []string { return append([]string(nil), s.args...) }

// Bin is the Temporal server binary in use.
func (s *Server) Bin() string { return s.bins.Server }

// PID is the Temporal server's current process id (0 when not running).
func (s *Server) PID() int { return s.process().LivePID() }

// Output is the tail of the Temporal server's output.
func (s *Server) Output() string { return s.process().Tail() }

func (s *Server) process() *serverproc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Kill ends the Temporal server at once (SIGKILL), as a crash would;
// PostgreSQL keeps its data for Restart.
func (s *Server) Kill() error {
	if p := s.process(); p != nil {
		return p.Kill()
	}
	return nil
}

// Restart stops the Temporal server (SIGTERM; nothing to do after Kill) and
// starts it again with the same config, ports and database, then waits
// until it serves. Workflows, task queues and the namespace survive.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return errors.New("the cluster has been stopped; start a new one")
	}
	if p := s.process(); p != nil {
		if err := p.Stop(syscall.SIGTERM, StopGrace); err != nil {
			return err
		}
	}
	// One deadline for all the server's ports, not ten seconds each.
	freeBy := time.Now().Add(portsFreeWithin)
	for _, port := range s.ports.server() {
		serverproc.WaitPortFree(s.ports.addr(port), max(time.Until(freeBy), 0))
	}
	return s.start(ctx, s.healthy, s.namespaceServed)
}

// Stop ends the Temporal server and PostgreSQL and removes the state
// directory (unless Options.Keep). It is safe to call more than once.
func (s *Server) Stop() error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	var errs []error
	if p := s.process(); p != nil {
		errs = append(errs, p.Stop(syscall.SIGTERM, StopGrace))
	}
	if s.pg != nil {
		errs = append(errs, s.pg.stop())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop the cluster in %s: %w", s.Dir, err)
	}
	if !s.opts.Keep && s.Dir != "" {
		if err := os.RemoveAll(s.Dir); err != nil {
			return fmt.Errorf("remove the cluster state directory: %w", err)
		}
	}
	return nil
}
