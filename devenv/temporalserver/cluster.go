package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	deploycluster "github.com/ralph-temporal/ralph/deploy/cluster"
)

// Environment variables that override the cluster's defaults.
const EnvPGBin = "RALPH_PG_BIN" // PostgreSQL's bin directory

// Cluster defaults.
const (
	DefaultNamespace    = "default"
	DefaultPGBin        = "/usr/lib/postgresql/15/bin"
	DefaultLogLevel     = "warn"
	DefaultStartTimeout = 2 * time.Minute
	// StopGrace is how long the cluster's server and PostgreSQL get after
	// their shutdown signal before SIGKILL.
	StopGrace = 20 * time.Second
	// namespaceRetention is the registered namespace's history retention.
	namespaceRetention = 24 * time.Hour
	// dbUser and dbPassword are the throwaway database's only login.
	dbUser     = "temporal"
	dbPassword = "temporal"
	// numHistoryShards is fixed when the schema is set up.
	numHistoryShards = 4
)

// ClusterOptions configure StartCluster. The zero value is a usable cluster.
type ClusterOptions struct {
	// Dir is the state directory to create (absent or empty); empty means a
	// new directory under the system temp dir.
	Dir string
	// Keep leaves the state directory in place after Stop (for debugging).
	Keep bool
	// CacheDir holds the built binaries (default DefaultCacheDir()).
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

func (opts ClusterOptions) withDefaults() ClusterOptions {
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

// StartCluster builds the server binaries when they are not cached,
// initialises and starts PostgreSQL, applies the schema, starts the
// Temporal server (frontend, history, matching and worker in one process)
// and waits until it serves the namespace with Ralph's search attributes.
// On failure nothing is left running.
func StartCluster(ctx context.Context, opts ClusterOptions) (*Server, error) {
	opts = opts.withDefaults()
	bins, err := EnsureServer(ctx, opts.CacheDir, opts.Output)
	if err != nil {
		return nil, err
	}
	dir, err := stateDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{Kind: Cluster, Namespace: opts.Namespace, Dir: dir, bin: bins.Server, workDir: dir,
		grace: StopGrace, timeout: opts.StartTimeout, output: opts.Output}
	s.cleanup = func() error {
		var errs []error
		if s.pg != nil {
			errs = append(errs, s.pg.stop())
		}
		if err := errors.Join(errs...); err == nil && !opts.Keep {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("remove the cluster state directory: %w", err))
			}
		}
		return errors.Join(errs...)
	}
	if err := s.setUpCluster(ctx, opts, bins); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
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

func (s *Server) setUpCluster(ctx context.Context, opts ClusterOptions, bins ServerBinaries) error {
	p, err := pickPorts()
	if err != nil {
		return err
	}
	s.Address = p.addr(p.frontend)
	s.HTTPAddress = p.addr(p.http)
	s.MetricsAddress = p.addr(p.metrics)
	s.PostgresURL = fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/temporal?sslmode=disable", dbUser, dbPassword, p.postgres)
	for _, port := range p.server() {
		s.ports = append(s.ports, p.addr(port))
	}
	s.pg, err = startPostgres(ctx, postgresConfig{
		bin: opts.PGBin, dir: filepath.Join(s.Dir, "pg"), port: p.postgres,
		durable: opts.Durable, output: opts.Output, timeout: opts.StartTimeout,
	})
	if err != nil {
		return err
	}
	if err := setUpSchema(ctx, bins.SQLTool, p.postgres, opts.Output); err != nil {
		return err
	}
	if err := s.writeClusterConfig(p, opts.LogLevel); err != nil {
		return err
	}
	// The namespace is registered once the frontend answers.
	if err := s.launch(ctx, healthy); err != nil {
		return err
	}
	return s.register(ctx)
}

// writeClusterConfig copies the embedded config files into the state
// directory and fixes the server's command line and environment, so a
// Restart runs exactly what the first start ran.
func (s *Server) writeClusterConfig(p ports, logLevel string) error {
	dir := filepath.Join(s.Dir, "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create the server config directory: %w", err)
	}
	dynamic := filepath.Join(dir, deploycluster.DynamicConfigFile)
	for name, text := range map[string]string{
		deploycluster.ServerConfigFile:  deploycluster.ServerConfig,
		deploycluster.DynamicConfigFile: deploycluster.DynamicConfig,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("write the server config %s: %w", name, err)
		}
	}
	settings := map[string]string{
		"DB":                           sqlPlugin,
		"POSTGRES_SEEDS":               "127.0.0.1",
		"DB_PORT":                      strconv.Itoa(p.postgres),
		"POSTGRES_USER":                dbUser,
		"POSTGRES_PWD":                 dbPassword,
		"DBNAME":                       "temporal",
		"VISIBILITY_DBNAME":            "temporal_visibility",
		"NUM_HISTORY_SHARDS":           strconv.Itoa(numHistoryShards),
		"BIND_ON_IP":                   "127.0.0.1",
		"TEMPORAL_BROADCAST_ADDRESS":   "127.0.0.1",
		"FRONTEND_GRPC_PORT":           strconv.Itoa(p.frontend),
		"FRONTEND_HTTP_PORT":           strconv.Itoa(p.http),
		"HISTORY_GRPC_PORT":            strconv.Itoa(p.history),
		"MATCHING_GRPC_PORT":           strconv.Itoa(p.matching),
		"WORKER_GRPC_PORT":             strconv.Itoa(p.worker),
		"FRONTEND_MEMBERSHIP_PORT":     strconv.Itoa(p.frontendMembership),
		"HISTORY_MEMBERSHIP_PORT":      strconv.Itoa(p.historyMembership),
		"MATCHING_MEMBERSHIP_PORT":     strconv.Itoa(p.matchingMembership),
		"WORKER_MEMBERSHIP_PORT":       strconv.Itoa(p.workerMembership),
		"PPROF_PORT":                   "0",
		"PROMETHEUS_ENDPOINT":          p.addr(p.metrics),
		"LOG_LEVEL":                    logLevel,
		"DYNAMIC_CONFIG_FILE_PATH":     dynamic,
		"DYNAMIC_CONFIG_POLL_INTERVAL": "10s",
	}
	// Only these settings: no TEMPORAL_* client variable of the caller's
	// reaches the server.
	s.env = []string{"PATH=/usr/bin:/bin", "HOME=" + s.Dir}
	for k, v := range settings {
		s.env = append(s.env, k+"="+v)
	}
	s.args = []string{"--root", s.Dir, "--config", "config", "--env", deploycluster.ConfigEnv, "--allow-no-auth", "start"}
	return nil
}
