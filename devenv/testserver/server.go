// Package testserver starts the Temporal server a suite runs against: the dev
// server, or the PostgreSQL-backed cluster when asked for.
package testserver

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/cluster"
	"github.com/ralph-temporal/ralph/devenv/devserver"
)

// EnvCluster set to 1 runs the real-stack suite against the
// PostgreSQL-backed cluster instead of the dev server.
const EnvCluster = "RALPH_TEST_CLUSTER"

// Server is what the suites need of a Temporal server: *devserver.Server
// and *cluster.Server both have it. Restart keeps the address and the
// stored state; Kill ends the server as a crash would.
type Server interface {
	Dial(ctx context.Context, opts client.Options) (client.Client, error)
	Env() []string
	Output() string
	Stop() error
	Kill() error
	Restart(ctx context.Context) error
}

// Started is a running Server and where it listens.
type Started struct {
	Server
	Address   string
	Namespace string
	// Kind says which server it is, for logs.
	Kind string
}

// StartServer starts the PostgreSQL-backed cluster (useCluster) or a dev
// server whose state lives in dir, so a Restart keeps it either way.
func StartServer(ctx context.Context, useCluster bool, dir string, output io.Writer) (Started, error) {
	if useCluster {
		s, err := cluster.Start(ctx, cluster.Options{Output: output})
		if err != nil {
			return Started{}, fmt.Errorf("start the PostgreSQL-backed cluster: %w", err)
		}
		return Started{Server: s, Address: s.Address, Namespace: s.Namespace, Kind: "PostgreSQL-backed Temporal cluster"}, nil
	}
	s, err := devserver.Start(ctx, devserver.Options{Install: true, DBFile: filepath.Join(dir, "temporal.db"), Output: output})
	if err != nil {
		return Started{}, fmt.Errorf("start the dev server: %w", err)
	}
	return Started{Server: s, Address: s.Address, Namespace: s.Namespace, Kind: "Temporal dev server"}, nil
}
