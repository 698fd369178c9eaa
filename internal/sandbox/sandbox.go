package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ralph-temporal/ralph/internal/names"
)

// homeDirPerm: a private home holds tool caches and whatever the model puts
// there; only the worker's user reads it.
const homeDirPerm = 0o700

// Exposure says what commands can reach when they run unsandboxed; the
// worker logs it when auto mode falls back to running without bubblewrap.
const Exposure = "commands run as the worker's user without isolation: they can read every workspace under the workspace root, " +
	"the session directory (transcripts of every run), the worker's home directory (.ssh, .netrc, .git-credentials, cloud configs), " +
	"the TEMPORAL_TLS_* files and RALPH_SANDBOX_HIDE paths, and the environment of other processes of that user; " +
	"only the allowlisted environment, the non-dumpable worker and the process-group kill still apply"

// Paths are the worker's own places the sandbox is built around.
type Paths struct {
	// WorkspaceRoot holds every workspace; all but the command's own are hidden.
	WorkspaceRoot string
	// SessionDir holds transcripts and locks; hidden.
	SessionDir string
	// HomesDir holds one private HOME per workspace. It should lie in a
	// hidden directory (for example under SessionDir) so that a workspace
	// sees only its own.
	HomesDir string
	// Environ is the worker's environment: its HOME, the TEMPORAL_TLS_*
	// files, TEMPORAL_CONFIG_FILE and RALPH_ENCRYPTION_KEY_FILE are hidden.
	Environ []string
}

// Sandbox is a resolved policy: how every command of this worker runs. A nil
// *Sandbox runs commands directly with the allowlisted environment and the
// worker's HOME (unit tests, library use).
type Sandbox struct {
	mode       string // ModeBwrap or ModeOff
	fallback   string // why auto mode runs without bubblewrap
	bwrap      string // absolute path of bwrap
	network    bool
	root       string
	homes      string
	hidden     []string // existing absolute paths
	share      []string
	envNames   []string
	protectGit bool
}

// New resolves cfg against the machine. ModeAuto and ModeBwrap probe
// bubblewrap once with the very mounts commands get; ModeBwrap fails when
// the probe does, ModeAuto then falls back to ModeOff (Fallback says why).
func New(ctx context.Context, cfg Config, p Paths) (*Sandbox, error) {
	s := &Sandbox{mode: cfg.Mode, network: cfg.Network, protectGit: cfg.ProtectGit}
	var err error
	if s.root, err = absReal(p.WorkspaceRoot, "workspace root"); err != nil {
		return nil, err
	}
	if s.homes, err = filepath.Abs(p.HomesDir); err != nil || p.HomesDir == "" {
		return nil, fmt.Errorf("sandbox: homes directory %q: must be a usable path", p.HomesDir)
	}
	if err := os.MkdirAll(s.homes, homeDirPerm); err != nil {
		return nil, fmt.Errorf("sandbox: create the homes directory: %w", err)
	}
	for _, name := range cfg.CommandEnv {
		if err := checkEnvName(name); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	s.envNames = append([]string(nil), cfg.CommandEnv...)
	if s.hidden, s.share, err = resolveMounts(cfg, p, s.root); err != nil {
		return nil, err
	}
	switch cfg.Mode {
	case ModeOff:
		return s, nil
	case ModeAuto, ModeBwrap:
	default:
		return nil, fmt.Errorf("sandbox: RALPH_SANDBOX must be %s, %s or %s, got %q", ModeAuto, ModeBwrap, ModeOff, cfg.Mode)
	}
	s.mode = ModeBwrap
	if err := s.probe(ctx); err != nil {
		if cfg.Mode == ModeBwrap {
			return nil, fmt.Errorf("sandbox: RALPH_SANDBOX=bwrap but bubblewrap does not work here: %w", err)
		}
		s.mode, s.fallback, s.bwrap = ModeOff, err.Error(), ""
	}
	return s, nil
}

// Mode is ModeBwrap or ModeOff: what commands actually run under.
func (s *Sandbox) Mode() string {
	if s == nil {
		return ModeOff
	}
	return s.mode
}

// Fallback is why auto mode runs commands without bubblewrap ("" otherwise).
func (s *Sandbox) Fallback() string {
	if s == nil {
		return ""
	}
	return s.fallback
}

// ProtectsGit reports whether the workspace's .git is off limits to the
// model (Config.ProtectGit); a nil Sandbox does not protect it.
func (s *Sandbox) ProtectsGit() bool { return s != nil && s.protectGit }

// Hidden lists the paths commands cannot see under bubblewrap.
func (s *Sandbox) Hidden() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.hidden...)
}

// Home creates (if needed) and returns the private HOME of the workspace at
// dir, kept outside it so that tool caches survive between rounds. A nil
// Sandbox returns "": commands keep the worker's HOME.
func (s *Sandbox) Home(dir string) (string, error) {
	if s == nil {
		return "", nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: workspace %s: %w", dir, err)
	}
	rel, err := filepath.Rel(s.root, real)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("sandbox: workspace %s is not under the workspace root %s", dir, s.root)
	}
	home := filepath.Join(s.homes, names.Flat(rel))
	if err := os.MkdirAll(home, homeDirPerm); err != nil {
		return "", fmt.Errorf("sandbox: create the private home of %s: %w", rel, err)
	}
	return home, nil
}

// Env is the environment of a command whose private home is home.
func (s *Sandbox) Env(environ []string, home string) []string {
	if s == nil {
		return CommandEnv(environ, nil, "", "")
	}
	tmp := ""
	if s.mode == ModeBwrap {
		tmp = sandboxTmp
	}
	return CommandEnv(environ, s.envNames, home, tmp)
}

// Command returns the program and arguments that run argv for the workspace
// dir: argv itself without bubblewrap, else bwrap around it. infoFD, when
// non-negative, is the descriptor bwrap reports its namespace's first
// process on (see InitPID).
func (s *Sandbox) Command(dir, home string, infoFD int, argv []string) (string, []string) {
	return s.CommandReadOnly(dir, home, infoFD, ReadOnly{}, argv)
}

// ReadOnly is what a command may read but not write (SPEC section 23).
type ReadOnly struct {
	// Workspace mounts the whole workspace read-only (the reviewer's commands).
	Workspace bool
	// Paths are absolute paths inside the workspace (protected files) mounted
	// read-only over the workspace's read-write mount.
	Paths []string
}

// CommandReadOnly is Command with parts of the workspace read-only. Without
// bubblewrap nothing can be mounted: the caller's other guards apply.
func (s *Sandbox) CommandReadOnly(dir, home string, infoFD int, ro ReadOnly, argv []string) (string, []string) {
	if s == nil || s.mode != ModeBwrap {
		return argv[0], argv[1:]
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // bwrap mounts over what the name leads to
	}
	return s.bwrap, s.args(dir, home, infoFD, argv, ro)
}

// absReal makes dir absolute and symlink-free; it must exist.
func absReal(dir, what string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("sandbox: the %s is required", what)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s %q: %w", what, dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s %q: %w", what, dir, err)
	}
	return real, nil
}
