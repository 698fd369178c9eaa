// Package temporalserver runs the Temporal servers of the tests, the
// benchmarks and the local tools, all on 127.0.0.1, in two kinds behind one
// Server type:
//
//   - StartDev: the dev server (`temporal server start-dev` of the pinned
//     Temporal CLI), in memory or on a SQLite file;
//   - StartCluster: a production-style cluster without Docker: Debian's
//     PostgreSQL 15 and the full Temporal server built from the Go module
//     proxy, every piece in one state directory that Stop removes.
//
// Both register Ralph's search attributes and dynamic config. One installer
// builds the pinned binaries into Ralph's cache under a file lock
// (install.go), one process runner starts every server in its own process
// group (process.go), and one readiness wait decides when a server serves
// (ready.go).
package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
)

// Kind says which server a Server is.
type Kind string

const (
	Dev     Kind = "Temporal dev server"
	Cluster Kind = "PostgreSQL-backed Temporal cluster"
)

// portsFreeWithin bounds how long a restart waits for the stopped server's
// ports to be released.
const portsFreeWithin = 10 * time.Second

// Server is a running Temporal server of either kind.
type Server struct {
	Kind Kind
	// Address is the frontend gRPC host:port, for TEMPORAL_ADDRESS.
	Address string
	// Namespace is the namespace it serves (registered at start).
	Namespace string
	// UIAddress is the dev server's web UI, empty when headless.
	UIAddress string
	// HTTPAddress is the cluster frontend's HTTP API; MetricsAddress serves
	// its Prometheus /metrics; PostgresURL reaches its database.
	HTTPAddress    string
	MetricsAddress string
	PostgresURL    string
	// Dir is the cluster's state directory.
	Dir string

	bin     string
	args    []string
	env     []string
	workDir string
	// ports are the addresses the server binds, free again after a stop.
	ports   []string
	grace   time.Duration // after SIGTERM, before SIGKILL
	timeout time.Duration // bounds each readiness wait
	output  io.Writer
	// cleanup ends what the server needs besides its process (PostgreSQL,
	// the state directory); run once by Stop.
	cleanup func() error
	// pg is the cluster's PostgreSQL.
	pg *postgres

	mu      sync.Mutex
	proc    *Process
	stopped bool
}

// launch starts the server process and waits until it passes checks.
func (s *Server) launch(ctx context.Context, checks ...readyCheck) error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Env = s.env
	cmd.Dir = s.workDir
	proc, err := StartProcess(string(s.Kind), cmd, s.output)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	return s.waitServes(ctx, proc, checks...)
}

func (s *Server) process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Dial returns a client for the server's namespace; opts.HostPort and
// opts.Namespace are filled in when empty, and the SDK's logs are dropped
// unless opts.Logger is set.
func (s *Server) Dial(ctx context.Context, opts client.Options) (client.Client, error) {
	if opts.Logger == nil {
		opts.Logger = QuietLogger{}
	}
	if opts.HostPort == "" {
		opts.HostPort = s.Address
	}
	if opts.Namespace == "" {
		opts.Namespace = s.Namespace
	}
	return client.DialContext(ctx, opts)
}

// Env is the environment a worker or starter needs to reach this server.
func (s *Server) Env() []string {
	return []string{"TEMPORAL_ADDRESS=" + s.Address, "TEMPORAL_NAMESPACE=" + s.Namespace}
}

// Args is the server's command line (without the binary).
func (s *Server) Args() []string { return append([]string(nil), s.args...) }

// Bin is the server binary in use (the temporal CLI for the dev server).
func (s *Server) Bin() string { return s.bin }

// PID is the server's current process id (0 when not running).
func (s *Server) PID() int { return s.process().LivePID() }

// Output is the tail of the server's stdout and stderr.
func (s *Server) Output() string { return s.process().Tail() }

// Kill ends the server at once (SIGKILL to its process group), as a crash
// would; its stored state stays for Restart.
func (s *Server) Kill() error {
	if p := s.process(); p != nil {
		return p.Kill()
	}
	return nil
}

// Restart stops the server (SIGTERM; nothing to do after Kill) and starts
// it again with the same command line, ports and storage, then waits until
// it serves the namespace. Workflows, task queues and the namespace survive
// (the dev server's only with a DB file).
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return fmt.Errorf("the %s has been stopped; start a new one", s.Kind)
	}
	if p := s.process(); p != nil {
		if err := p.Stop(syscall.SIGTERM, s.grace); err != nil {
			return err
		}
	}
	// One deadline for all the server's ports, not one each.
	freeBy := time.Now().Add(portsFreeWithin)
	for _, addr := range s.ports {
		WaitPortFree(addr, max(time.Until(freeBy), 0))
	}
	return s.launch(ctx, healthy, s.namespaceServed)
}

// Stop ends the server and everything it started (SIGTERM to its process
// group, SIGKILL after a grace period), then what it needs besides (the
// cluster's PostgreSQL and state directory). It is safe to call more than
// once.
func (s *Server) Stop() error {
	s.mu.Lock()
	first := !s.stopped
	s.stopped = true
	s.mu.Unlock()
	var errs []error
	if p := s.process(); p != nil {
		errs = append(errs, p.Stop(syscall.SIGTERM, s.grace))
	}
	if first && s.cleanup != nil {
		errs = append(errs, s.cleanup())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop the %s: %w", s.Kind, err)
	}
	return nil
}

// serverEnv is the caller's environment without the TEMPORAL_* client
// variables, which the CLI would otherwise read as its own settings.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TEMPORAL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
