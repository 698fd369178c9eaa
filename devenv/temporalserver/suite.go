package temporalserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// EnvCluster set to 1 runs the real-stack suite against the
// PostgreSQL-backed cluster instead of the dev server.
const EnvCluster = "RALPH_TEST_CLUSTER"

// ClusterRequested reports whether RALPH_TEST_CLUSTER asks for the cluster.
func ClusterRequested() bool { return os.Getenv(EnvCluster) == "1" }

// StartForSuite starts the server a suite runs against: the
// PostgreSQL-backed cluster (useCluster), or a dev server whose state lives
// in dir, so a Restart keeps it either way.
func StartForSuite(ctx context.Context, useCluster bool, dir string, output io.Writer) (*Server, error) {
	if useCluster {
		s, err := StartCluster(ctx, ClusterOptions{Output: output})
		if err != nil {
			return nil, fmt.Errorf("start the %s: %w", Cluster, err)
		}
		return s, nil
	}
	s, err := StartDev(ctx, DevOptions{DBFile: filepath.Join(dir, "temporal.db"), Output: output})
	if err != nil {
		return nil, fmt.Errorf("start the %s: %w", Dev, err)
	}
	return s, nil
}
