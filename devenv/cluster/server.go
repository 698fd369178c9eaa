package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	deploycluster "github.com/ralph-temporal/ralph/deploy/cluster"
	"github.com/ralph-temporal/ralph/devenv/serverproc"
)

const (
	// numHistoryShards is fixed when the schema is set up.
	numHistoryShards = 4
	// readyPoll is how often a starting server is asked whether it serves.
	readyPoll = 100 * time.Millisecond
	// probeWorkflowID names the workflow the readiness checks look up (it
	// never exists: history answering NotFound means it serves).
	probeWorkflowID = "ralph-cluster-readiness-probe"
)

// writeConfig copies the embedded config files into the state directory
// and fixes the server's command line and environment, so a Restart runs
// exactly what the first start ran.
func (s *Server) writeConfig() error {
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
	p := s.ports
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
		"LOG_LEVEL":                    s.opts.LogLevel,
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

// start launches the server and waits until it passes checks (a first
// start only waits for health: the namespace is registered after it).
func (s *Server) start(ctx context.Context, checks ...readyCheck) error {
	cmd := exec.Command(s.bins.Server, s.args...)
	cmd.Env = s.env
	cmd.Dir = s.Dir
	proc, err := serverproc.Start("Temporal server", cmd, s.opts.Output)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	return s.waitFor(ctx, proc, checks...)
}

// readyCheck is one readiness question; nil means yes.
type readyCheck func(ctx context.Context, c client.Client) error

// waitFor asks checks in order until all pass, the server exits, or the
// start timeout passes.
func (s *Server) waitFor(ctx context.Context, proc *serverproc.Process, checks ...readyCheck) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	var last error
	for {
		if proc.Exited() {
			return fmt.Errorf("the Temporal server exited before it served (%v); its output ends with:\n%s", proc.ExitErr(), proc.Output())
		}
		if last = s.check(ctx, checks); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Temporal server at %s does not serve after %s: %v; its output ends with:\n%s", s.Address, s.opts.StartTimeout, last, proc.Output())
		case <-proc.Done():
		case <-time.After(readyPoll):
		}
	}
}

func (s *Server) check(ctx context.Context, checks []readyCheck) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := s.Dial(cctx, client.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, check := range checks {
		if err := check(cctx, c); err != nil {
			return err
		}
	}
	return nil
}

// healthy: the frontend answers the SDK's health check.
func (s *Server) healthy(ctx context.Context, c client.Client) error {
	_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// namespaceServed: the namespace is described and history answers for it
// (NotFound for a workflow that does not exist), so workers and clients
// can work at once.
func (s *Server) namespaceServed(ctx context.Context, c client.Client) error {
	if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.Namespace}); err != nil {
		return fmt.Errorf("describe namespace %s: %w", s.Namespace, err)
	}
	_, err := c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: s.Namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: probeWorkflowID},
	})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("workflow %s exists", probeWorkflowID)
	}
	return fmt.Errorf("history of namespace %s: %w", s.Namespace, err)
}
