// Package sandbox runs the model's commands (and the verify command) so that
// they cannot reach what the worker holds.
package sandbox

import "github.com/ralph-temporal/ralph/internal/netproxy"

// Modes of RALPH_SANDBOX.
const (
	ModeAuto  = "auto"
	ModeBwrap = "bwrap"
	ModeOff   = "off"
)

// Modes of RALPH_SANDBOX_NETWORK.
const (
	// NetProxy: a network namespace of the command's own whose only way out
	// is the worker's filtering proxy.
	NetProxy = "proxy"
	// NetOff: no network at all.
	NetOff = "off"
	// NetHost: the host's network.
	NetHost = "host"
)

// Defaults of the resource limits (docs/security.md#resources).
const (
	DefaultTmpMB    = 1024
	DefaultMemoryMB = 4096
	DefaultPids     = 1024
	// DefaultWorkspaceMaxMB bounds one workspace, DefaultMinFreeMB is kept
	// free where the workspaces and the session directory live.
	DefaultWorkspaceMaxMB = 20480
	DefaultMinFreeMB      = 2048
	// DefaultWorkspaceMaxFiles bounds the inodes of a workspace with the
	// agent's home, DefaultAgentHomeMaxMB the disk of a CLI's home.
	DefaultWorkspaceMaxFiles = 200000
	DefaultAgentHomeMaxMB    = 1024
	// DefaultToolCacheMB bounds the worker's warm tool caches (every line
	// together, RALPH_TOOL_CACHE_MB).
	DefaultToolCacheMB = 8192
)

// Config is the deployment's sandbox policy.
type Config struct {
	// Mode is ModeAuto, ModeBwrap or ModeOff.
	Mode string
	// Network is NetProxy, NetOff or NetHost (RALPH_SANDBOX_NETWORK).
	Network string
	// AllowHosts, when set, are the only destinations the proxy allows
	// (RALPH_SANDBOX_ALLOW_HOSTS).
	AllowHosts []string
	// Mirrors are the package registries the worker's environment names
	// (netproxy.Mirrors): reachable at private and special-purpose
	// addresses too while AllowHosts is empty.
	Mirrors []netproxy.Mirror
	// TmpMB sizes the private /tmp and /dev/shm (RALPH_SANDBOX_TMP_MB).
	TmpMB int
	// MemoryMB and Pids limit each command's cgroup
	// (RALPH_SANDBOX_MEMORY_MB, RALPH_SANDBOX_PIDS).
	MemoryMB int
	Pids     int
	// Hide are extra paths made invisible (RALPH_SANDBOX_HIDE).
	Hide []string
	// Share are paths mounted read-write (RALPH_SANDBOX_SHARE).
	Share []string
	// CommandEnv are extra variable names passed to commands (RALPH_COMMAND_ENV).
	CommandEnv []string
	// WorkspaceMaxMB and MinFreeMB are the disk bounds a running command is
	// killed at (RALPH_WORKSPACE_MAX_MB, RALPH_MIN_FREE_MB).
	WorkspaceMaxMB int
	MinFreeMB      int
	// WorkspaceMaxFiles bounds the files (inodes) of a workspace and the
	// home of the command (RALPH_WORKSPACE_MAX_FILES); AgentHomeMaxMB the
	// disk of an agent CLI's home (RALPH_AGENT_HOME_MAX_MB).
	WorkspaceMaxFiles int
	AgentHomeMaxMB    int
	// ToolCacheMB bounds the warm tool caches of every line together
	// (RALPH_TOOL_CACHE_MB, docs/campaigns.md#warm-verifies).
	ToolCacheMB int
	// UID and GID are who a root worker runs commands as
	// (RALPH_SANDBOX_UID, RALPH_SANDBOX_GID); zero means the defaults. A
	// non-root worker runs them as itself.
	UID, GID int
	// ProtectGit (git modes): the workspace's .git is read-only inside the
	// sandbox and the file tools refuse every path with a .git component,
	// so nothing the model does can change what the worker's git steps run.
	ProtectGit bool
}

// DefaultConfig is auto mode, commands' network through the proxy, and the
// default limits.
func DefaultConfig() Config {
	return Config{Mode: ModeAuto, Network: NetProxy, TmpMB: DefaultTmpMB, MemoryMB: DefaultMemoryMB, Pids: DefaultPids,
		UID: DefaultUID, GID: DefaultGID, WorkspaceMaxMB: DefaultWorkspaceMaxMB, MinFreeMB: DefaultMinFreeMB,
		WorkspaceMaxFiles: DefaultWorkspaceMaxFiles, AgentHomeMaxMB: DefaultAgentHomeMaxMB, ToolCacheMB: DefaultToolCacheMB}
}

// withDefaults fills zero fields (a Config built by hand in a test or an
// older caller) with the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Network == "" {
		c.Network = d.Network
	}
	if c.TmpMB == 0 {
		c.TmpMB = d.TmpMB
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = d.MemoryMB
	}
	if c.Pids == 0 {
		c.Pids = d.Pids
	}
	if c.WorkspaceMaxMB == 0 {
		c.WorkspaceMaxMB = d.WorkspaceMaxMB
	}
	if c.MinFreeMB == 0 {
		c.MinFreeMB = d.MinFreeMB
	}
	if c.WorkspaceMaxFiles == 0 {
		c.WorkspaceMaxFiles = d.WorkspaceMaxFiles
	}
	if c.AgentHomeMaxMB == 0 {
		c.AgentHomeMaxMB = d.AgentHomeMaxMB
	}
	if c.ToolCacheMB == 0 {
		c.ToolCacheMB = d.ToolCacheMB
	}
	return c
}
