package workerapp

import (
	"context"

	"github.com/ralph-temporal/ralph/agent/cli"
)

// checkAgents checks the agent providers before the worker polls (a CLI
// missing, or outside the tested versions, refuses the start naming it)
// and returns what the start line says of them.
func checkAgents(ctx context.Context, s cli.Settings) ([]any, error) {
	found, err := s.CheckAll(ctx)
	if err != nil {
		return nil, err
	}
	attrs := []any{"agent", s.Agent, "reviewAgent", s.ReviewAgent()}
	for _, f := range found {
		attrs = append(attrs, "agentCLI."+f.Dialect.Name(), f.String())
	}
	return attrs, nil
}
