package workerapp

import (
	"log/slog"

	"github.com/ralph-temporal/ralph/internal/gitws"
)

// logGitBound says once, at start, which bounds hold on the worker's own
// git commands; like a command's limits, a bound that cannot hold (no
// writable cgroup hierarchy: a non-root worker) is a warning, not a refusal.
func logGitBound(logger *slog.Logger, g *gitws.Git) {
	if g == nil {
		return
	}
	enforced, why := g.Bound()
	if enforced == "" {
		logger.Warn("worker's git: no memory or pids bound holds on git commands: a tree the model wrote can make one git command exhaust the worker's memory",
			"timeout", gitws.CommandTimeout.String(), "reason", why)
		return
	}
	logger.Info("worker's git: every git command in its own cgroup", "limits", enforced, "timeout", gitws.CommandTimeout.String())
	if why != "" {
		logger.Warn("worker's git: a bound of git commands does not hold", "reason", why)
	}
}
