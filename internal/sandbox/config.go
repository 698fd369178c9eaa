// Package sandbox runs the model's commands (and the verify command) so that
// they cannot reach what the worker holds.
package sandbox

// Modes of RALPH_SANDBOX.
const (
	ModeAuto  = "auto"
	ModeBwrap = "bwrap"
	ModeOff   = "off"
)

// Config is the deployment's sandbox policy.
type Config struct {
	// Mode is ModeAuto, ModeBwrap or ModeOff.
	Mode string
	// Network keeps the network inside the sandbox (RALPH_SANDBOX_NETWORK).
	Network bool
	// Hide are extra paths made invisible (RALPH_SANDBOX_HIDE).
	Hide []string
	// Share are paths mounted read-write (RALPH_SANDBOX_SHARE).
	Share []string
	// CommandEnv are extra variable names passed to commands (RALPH_COMMAND_ENV).
	CommandEnv []string
	// ProtectGit (git modes): the workspace's .git is read-only inside the
	// sandbox and the file tools refuse every path with a .git component,
	// so nothing the model does can change what the worker's git steps run.
	ProtectGit bool
}

// DefaultConfig is auto mode with the network kept.
func DefaultConfig() Config { return Config{Mode: ModeAuto, Network: true} }
