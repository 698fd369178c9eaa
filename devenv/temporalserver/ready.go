package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/wait"
)

const (
	// readyPoll is how often a starting server is asked whether it serves.
	readyPoll = 100 * time.Millisecond
	// probeTimeout bounds one readiness probe.
	probeTimeout = 5 * time.Second
	// probeWorkflowID names the workflow the readiness checks look up (it
	// never exists: history answering NotFound means it serves).
	probeWorkflowID = "ralph-readiness-probe"
)

// waitReady is the one readiness wait of every server here (Temporal and
// PostgreSQL): it asks ready until it passes, the process exits, or within
// passes, and names the process and the tail of its output when it fails.
func waitReady(ctx context.Context, p *Process, within time.Duration, ready func(context.Context) error) error {
	err := wait.For(ctx, within, readyPoll, func(ctx context.Context) error {
		if p.Exited() {
			return wait.Final(fmt.Errorf("%s exited before it was ready (%v)", p.name, p.ExitErr()))
		}
		return ready(ctx)
	})
	var timedOut *wait.TimedOut
	switch {
	case err == nil:
		return nil
	case errors.As(err, &timedOut):
		return fmt.Errorf("%s not ready after %s: %v; its output ends with:\n%s", p.name, within, timedOut.Last, p.Output())
	default:
		return fmt.Errorf("%v; its output ends with:\n%s", err, p.Output())
	}
}

// readyCheck is one readiness question to a Temporal server; nil means yes.
type readyCheck func(ctx context.Context, c client.Client) error

// waitServes waits until the server process p answers every check.
func (s *Server) waitServes(ctx context.Context, p *Process, checks ...readyCheck) error {
	return waitReady(ctx, p, s.timeout, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		defer cancel()
		c, err := s.Dial(cctx, client.Options{})
		if err != nil {
			return fmt.Errorf("%s at %s: %w", s.Kind, s.Address, err)
		}
		defer c.Close()
		for _, check := range checks {
			if err := check(cctx, c); err != nil {
				return fmt.Errorf("%s at %s: %w", s.Kind, s.Address, err)
			}
		}
		return nil
	})
}

// healthy: the frontend answers the SDK's health check.
func healthy(ctx context.Context, c client.Client) error {
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
