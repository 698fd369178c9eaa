// Package devserver runs a local Temporal development server (`temporal
// server start-dev`, the temporal CLI) for integration tests, benchmarks and
// the local demo (cmd/ralph-local): it finds or installs the CLI, starts the
// server on free 127.0.0.1 ports with Ralph's dynamic config and search
// attributes, waits until it is healthy and stops the whole process group.
package devserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	deploycluster "github.com/ralph-temporal/ralph/deploy/cluster"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/serverproc"
	"github.com/ralph-temporal/ralph/workflows"
)

// CLIModule and CLIVersion are what InstallCLI installs from the Go module
// proxy; the CLI embeds Temporal server v1.29.1.
const (
	CLIModule  = "github.com/temporalio/cli/cmd/temporal"
	CLIVersion = "v1.5.1"
)

// EnvTemporalBin names an explicit temporal CLI binary.
const EnvTemporalBin = "RALPH_TEMPORAL_BIN"

// DynamicConfig is Ralph's dynamic config for the dev server, as KEY=VALUE
// (value in JSON), read from deploy/cluster/dynamicconfig.yaml, the file the
// PostgreSQL cluster and compose run: one home for the values. The file is
// embedded, so a parse failure is a build mistake the tests catch.
func DynamicConfig() []string {
	values, err := deploycluster.DevServerValues()
	if err != nil {
		panic(err)
	}
	return values
}

// Options configure Start. The zero value is a usable in-memory server.
type Options struct {
	// Bin is the temporal CLI; empty means FindCLI (and InstallCLI when
	// Install is set and the CLI is not found).
	Bin     string
	Install bool
	// DBFile persists the server's state (SQLite) across Restart and
	// process restarts; empty keeps everything in memory.
	DBFile string
	// Port is the frontend gRPC port; 0 picks a free one.
	Port int
	// UIPort serves the web UI when non-zero; 0 runs headless.
	UIPort int
	// Namespaces to create besides "default".
	Namespaces []string
	// LogLevel of the server: debug, info, warn (default), error, never.
	LogLevel string
	// DynamicConfig replaces DynamicConfig() when non-nil.
	DynamicConfig []string
	// ExtraArgs are appended to `temporal server start-dev`.
	ExtraArgs []string
	// Output receives the server's stdout and stderr (default: discarded;
	// the tail is kept for error messages either way).
	Output io.Writer
	// StartTimeout bounds waiting for a healthy server (default 60 s).
	StartTimeout time.Duration
}

// Server is a running dev server.
type Server struct {
	// Address is the frontend host:port, for TEMPORAL_ADDRESS.
	Address string
	// Namespace is "default".
	Namespace string
	// UIAddress is the web UI host:port, empty when headless.
	UIAddress string

	opts Options
	bin  string
	args []string

	mu   sync.Mutex
	proc *serverproc.Process
}

// Start finds the CLI, starts the dev server and waits until it is healthy
// and its default namespace answers.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin := opts.Bin
	if bin == "" {
		var err error
		bin, err = FindCLI()
		if err != nil && opts.Install {
			bin, err = InstallCLI(ctx, opts.Output)
		}
		if err != nil {
			return nil, err
		}
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	port := opts.Port
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	s := &Server{
		Address:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Namespace: client.DefaultNamespace,
		opts:      opts,
		bin:       bin,
	}
	s.args = []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--log-level", opts.LogLevel}
	if opts.UIPort > 0 {
		s.args = append(s.args, "--ui-port", strconv.Itoa(opts.UIPort))
		s.UIAddress = net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.UIPort))
	} else {
		s.args = append(s.args, "--headless")
	}
	if opts.DBFile != "" {
		s.args = append(s.args, "--db-filename", opts.DBFile)
	}
	for _, ns := range opts.Namespaces {
		s.args = append(s.args, "--namespace", ns)
	}
	dc := opts.DynamicConfig
	if dc == nil {
		dc = DynamicConfig()
	}
	for _, kv := range dc {
		s.args = append(s.args, "--dynamic-config-value", kv)
	}
	// Registered at start so the worker's check finds them and
	// `temporal workflow list --query "RalphPhase='paused'"` works at once.
	for _, sa := range workflows.SearchAttributes() {
		s.args = append(s.args, "--search-attribute", sa.Name+"="+sa.Type)
	}
	s.args = append(s.args, opts.ExtraArgs...)
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Args is the server's command line (without the binary).
func (s *Server) Args() []string { return append([]string(nil), s.args...) }

// Bin is the temporal CLI in use.
func (s *Server) Bin() string { return s.bin }

func (s *Server) start(ctx context.Context) error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Env = childEnv()
	proc, err := serverproc.Start("temporal dev server", cmd, s.opts.Output)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	if err := s.waitHealthy(ctx, proc); err != nil {
		_ = s.Stop()
		return err
	}
	return nil
}

func (s *Server) process() *serverproc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// waitHealthy dials until the frontend answers a health check and the
// default namespace is described, or the process exits, or time runs out.
func (s *Server) waitHealthy(ctx context.Context, proc *serverproc.Process) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	var last error
	for {
		if proc.Exited() {
			return fmt.Errorf("temporal dev server exited before it became healthy (%v); its output ends with:\n%s", proc.ExitErr(), proc.Output())
		}
		last = s.check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("temporal dev server at %s not healthy after %s: %v; its output ends with:\n%s", s.Address, s.opts.StartTimeout, last, proc.Output())
		case <-proc.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Server) check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := s.Dial(cctx, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(cctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err = c.WorkflowService().DescribeNamespace(cctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace})
	return err
}

// QuietLogger is an SDK logger that drops everything.
type QuietLogger = serverproc.QuietLogger

// Dial returns a client for the server's default namespace; opts.HostPort
// and opts.Namespace are filled in when empty, and the SDK's logs are
// dropped unless opts.Logger is set.
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

// PID is the server's current process id (0 when not running).
func (s *Server) PID() int { return s.process().LivePID() }

// Output is the tail of the server's stdout and stderr.
func (s *Server) Output() string { return s.process().Tail() }

// Stop ends the server and every process it started: SIGTERM to its process
// group, then SIGKILL after 10 s. It is safe to call more than once.
func (s *Server) Stop() error {
	if p := s.process(); p != nil {
		return p.Stop(syscall.SIGTERM, 10*time.Second)
	}
	return nil
}

// Kill ends the server at once (SIGKILL to its process group), as a crash would.
func (s *Server) Kill() error {
	if p := s.process(); p != nil {
		return p.Kill()
	}
	return nil
}

// Restart stops the server and starts it again on the same address with the
// same options. State survives only with Options.DBFile.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	serverproc.WaitPortFree(s.Address, 10*time.Second)
	return s.start(ctx)
}

// FindCLI locates the temporal CLI: RALPH_TEMPORAL_BIN, then PATH, then
// $(go env GOPATH)/bin/temporal.
func FindCLI() (string, error) {
	if bin := os.Getenv(EnvTemporalBin); bin != "" {
		if isExecutable(bin) {
			return bin, nil
		}
		return "", fmt.Errorf("%s=%q is not an executable file", EnvTemporalBin, bin)
	}
	if bin, err := exec.LookPath("temporal"); err == nil {
		return bin, nil
	}
	for _, dir := range goBinDirs() {
		bin := filepath.Join(dir, "temporal")
		if isExecutable(bin) {
			return bin, nil
		}
	}
	return "", fmt.Errorf("the temporal CLI was not found (looked at %s, PATH and the Go bin directory); install it with `go install %s@%s` or set %s",
		EnvTemporalBin, CLIModule, CLIVersion, EnvTemporalBin)
}

// InstallCLI runs `go install` for the pinned CLI version and returns the
// installed binary. It needs the Go toolchain and the module proxy, and can
// take several minutes on a cold cache.
func InstallCLI(ctx context.Context, output io.Writer) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "install", CLIModule+"@"+CLIVersion)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if output != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&buf, output), io.MultiWriter(&buf, output)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", CLIModule, CLIVersion, err, buf.String())
	}
	for _, dir := range goBinDirs() {
		bin := filepath.Join(dir, "temporal")
		if isExecutable(bin) {
			return bin, nil
		}
	}
	return "", errors.New("go install succeeded but the temporal binary is not in GOBIN or GOPATH/bin")
}

// goBinDirs are where `go install` puts binaries: GOBIN, else GOPATH/bin.
func goBinDirs() []string {
	var dirs []string
	for _, key := range []string{"GOBIN", "GOPATH"} {
		out, err := exec.Command("go", "env", key).Output()
		if err != nil {
			continue
		}
		for _, p := range filepath.SplitList(strings.TrimSpace(string(out))) {
			if p == "" {
				continue
			}
			if key == "GOPATH" {
				p = filepath.Join(p, "bin")
			}
			dirs = append(dirs, p)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) { return serverproc.FreePort() }

// childEnv is the server's environment without the TEMPORAL_* client
// variables, which the CLI would otherwise read as its own settings.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TEMPORAL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
