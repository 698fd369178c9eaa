package temporalserver

import (
	"context"
	"io"
	"net"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	deploycluster "github.com/ralph-temporal/ralph/deploy/cluster"
	"github.com/ralph-temporal/ralph/workflows"
)

// devStopGrace is how long the dev server gets after SIGTERM before SIGKILL.
const devStopGrace = 10 * time.Second

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

// DevOptions configure StartDev. The zero value is a usable in-memory server.
type DevOptions struct {
	// Bin is the temporal CLI; empty means EnsureCLI (the pinned build,
	// installed into the cache when missing).
	Bin string
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
	// Output receives the install's and the server's output (default:
	// discarded; the tail is kept for error messages either way).
	Output io.Writer
	// StartTimeout bounds waiting for a healthy server (default 60 s).
	StartTimeout time.Duration
}

// StartDev starts `temporal server start-dev` of the pinned CLI on
// 127.0.0.1 with Ralph's dynamic config and search attributes, and waits
// until it is healthy and serves its default namespace.
func StartDev(ctx context.Context, opts DevOptions) (*Server, error) {
	bin := opts.Bin
	if bin == "" {
		var err error
		if bin, err = EnsureCLI(ctx, opts.Output); err != nil {
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
		Kind:      Dev,
		Address:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Namespace: client.DefaultNamespace,
		bin:       bin,
		env:       serverEnv(),
		grace:     devStopGrace,
		timeout:   opts.StartTimeout,
		output:    opts.Output,
	}
	s.ports = []string{s.Address}
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
	if err := s.launch(ctx, healthy, s.namespaceServed); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}
