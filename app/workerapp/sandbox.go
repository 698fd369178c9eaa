package workerapp

import (
	"log/slog"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// logSandbox says once, at start, how the model's commands run; a fallback
// of auto mode is a warning that names what commands can then reach.
func logSandbox(logger *slog.Logger, cfg sandbox.Config, sb *sandbox.Sandbox) {
	switch {
	case sb.Fallback() != "":
		logger.Warn("command sandbox: bubblewrap does not work on this machine, commands run unsandboxed (set RALPH_SANDBOX=bwrap to refuse to start instead)",
			"sandbox", sb.Mode(), "configured", cfg.Mode, "reason", sb.Fallback(), "exposed", sandbox.Exposure)
	case sb.Mode() == sandbox.ModeOff:
		logger.Info("command sandbox: off (RALPH_SANDBOX=off)", "sandbox", sb.Mode(), "exposed", sandbox.Exposure)
	default:
		logger.Info("command sandbox: bubblewrap", "sandbox", sb.Mode(), "configured", cfg.Mode,
			"network", cfg.Network, "hidden", sb.Hidden(), "shared", cfg.Share, "commandEnv", cfg.CommandEnv)
	}
}
