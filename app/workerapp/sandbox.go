package workerapp

import (
	"log/slog"
	"strings"

	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// logSandbox says once, at start, how the model's commands run: isolation,
// network and the limits that hold. A fallback of auto mode, a network rule
// that cannot be enforced and a limit that does not hold are warnings that
// name what commands can then reach or use.
func logSandbox(logger *slog.Logger, cfg sandbox.Config, sb *sandbox.Sandbox) {
	enforced, notLimited, why := sb.Limits()
	limits := strings.Join(enforced, "; ")
	if limits == "" {
		limits = "none"
	}
	switch {
	case sb.Fallback() != "":
		logger.Warn("command sandbox: bubblewrap does not work on this machine, commands run unsandboxed (set RALPH_SANDBOX=bwrap to refuse to start instead)",
			"sandbox", sb.Mode(), "configured", cfg.Mode, "reason", sb.Fallback(), "exposed", sandbox.Exposure,
			"network", "host (RALPH_SANDBOX_NETWORK="+cfg.Network+" cannot be enforced without the sandbox)", "limits", limits,
			"submissionFreeze", sb.SubmissionFreeze())
	case sb.Mode() == sandbox.ModeOff:
		logger.Warn("command sandbox: off (RALPH_SANDBOX=off)", "sandbox", sb.Mode(), "exposed", sandbox.Exposure,
			"network", "host (RALPH_SANDBOX_NETWORK="+cfg.Network+" cannot be enforced without the sandbox)", "limits", limits,
			"submissionFreeze", sb.SubmissionFreeze())
	default:
		uid, gid := sb.UID()
		logger.Info("command sandbox: bubblewrap", "sandbox", sb.Mode(), "configured", cfg.Mode,
			"uid", uid, "gid", gid, "jail", "no capability, no user namespace, seccomp filter, /proc/sys read-only",
			"network", networkText(sb.Network(), sb.AllowHosts(), sb.Mirrors()), "limits", limits, "submissionFreeze", sb.SubmissionFreeze(),
			"hidden", sb.Hidden(), "shared", cfg.Share, "commandEnv", cfg.CommandEnv, "registryEnv", sb.RegistryEnv(),
			"toolCaches", sb.ToolCaches().Kind())
		if sb.Network() == sandbox.NetHost {
			logger.Warn("command sandbox: RALPH_SANDBOX_NETWORK=host: commands reach every service this host reaches, the Temporal frontend, metrics and cloud metadata included")
		}
	}
	if len(notLimited) > 0 {
		logger.Warn("command sandbox: some resources of commands are not limited: one runaway command can exhaust them for the worker and every round",
			"notLimited", notLimited, "reason", why)
	}
}

// networkText is the start line's network: the mode, and in proxy mode
// what commands may reach (RALPH_SANDBOX_ALLOW_HOSTS alone when set, else
// public addresses and the package registries the environment names).
func networkText(network, allowHosts string, mirrors []netproxy.Mirror) string {
	switch network {
	case sandbox.NetProxy:
		if allowHosts != "" {
			return "proxy (only " + allowHosts + ")"
		}
		if len(mirrors) == 0 {
			return "proxy (public addresses only)"
		}
		named := make([]string, len(mirrors))
		for i, m := range mirrors {
			named[i] = m.String() + " from " + m.From
		}
		return "proxy (public addresses; package registries also at private and special-purpose addresses: " + strings.Join(named, ", ") + ")"
	case sandbox.NetOff:
		return "off (no network)"
	}
	return "host"
}
