package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ralph-temporal/ralph/internal/cgroup"
	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/toolcache"
)

// homeDirPerm: a private home holds tool caches and whatever the model puts
// there; only the worker's user reads it.
const homeDirPerm = 0o700

// Exposure says what commands can reach when they run unsandboxed; the
// worker logs it when auto mode falls back to running without bubblewrap.
const Exposure = "commands run as the worker's user without isolation: they can read every workspace under the workspace root, " +
	"the session directory (transcripts of every run), the worker's home directory (.ssh, .netrc, .git-credentials, cloud configs), " +
	"the TEMPORAL_TLS_* files and RALPH_SANDBOX_HIDE paths, and the environment of other processes of that user; " +
	"only the allowlisted environment, the non-dumpable worker and the process-group kill still apply; " +
	"no network rule can be enforced: commands reach every service the worker's host reaches, the Temporal frontend and cloud metadata included"

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
	network    string // NetProxy, NetOff or NetHost
	allow      *netproxy.AllowList
	tmpBytes   int64
	cg         *cgroup.Manager
	cgWhy      string // why some limit is not enforced
	limits     cgroup.Limits
	root       string
	homes      string
	hidden     []string // existing absolute paths
	share      []string
	envNames   []string
	registry   []string // registry variables commands get by default (RegistryEnv)
	protectGit bool
	disk       diskBounds
	id         identity // who commands run as
	seccomp    []byte   // the filter bwrap loads (see seccompFilter)
	owned      *ownedDirs
	caches     *toolcache.Store // the warm tool caches (toolcache)
}

// New resolves cfg against the machine. ModeAuto and ModeBwrap probe
// bubblewrap once with the very mounts commands get; ModeBwrap fails when
// the probe does, ModeAuto then falls back to ModeOff (Fallback says why).
func New(ctx context.Context, cfg Config, p Paths) (*Sandbox, error) {
	cfg = cfg.withDefaults()
	s := &Sandbox{owned: &ownedDirs{fine: ctimeSettleFine}, mode: cfg.Mode, network: cfg.Network, protectGit: cfg.ProtectGit, tmpBytes: int64(cfg.TmpMB) << 20,
		limits: cgroup.Limits{MemoryBytes: int64(cfg.MemoryMB) << 20, Pids: cfg.Pids}}
	if !slices.Contains([]string{NetProxy, NetOff, NetHost}, cfg.Network) {
		return nil, fmt.Errorf("sandbox: RALPH_SANDBOX_NETWORK must be %s, %s or %s, got %q", NetProxy, NetOff, NetHost, cfg.Network)
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"RALPH_SANDBOX_TMP_MB", cfg.TmpMB}, {"RALPH_SANDBOX_MEMORY_MB", cfg.MemoryMB}, {"RALPH_SANDBOX_PIDS", cfg.Pids},
		{"RALPH_WORKSPACE_MAX_MB", cfg.WorkspaceMaxMB}, {"RALPH_MIN_FREE_MB", cfg.MinFreeMB},
		{"RALPH_WORKSPACE_MAX_FILES", cfg.WorkspaceMaxFiles}, {"RALPH_AGENT_HOME_MAX_MB", cfg.AgentHomeMaxMB},
		{"RALPH_TOOL_CACHE_MB", cfg.ToolCacheMB}} {
		if v.n < 1 {
			return nil, fmt.Errorf("sandbox: %s must be a positive integer, got %d", v.name, v.n)
		}
	}
	var err error
	if s.id, err = resolveIdentity(cfg); err != nil {
		return nil, err
	}
	// Nothing the worker was handed by its parent reaches a command.
	if err := closeInheritedOnExec(); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if s.allow, err = netproxy.ParseAllowList(cfg.AllowHosts); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.allow = s.allow.WithMirrors(cfg.Mirrors)
	s.cg, s.cgWhy = cgroup.Detect(s.limits)
	if s.id.drop {
		s.cg.RunAs(s.id.uid, s.id.gid)
	}
	if s.root, err = absReal(p.WorkspaceRoot, "workspace root"); err != nil {
		return nil, err
	}
	s.disk = diskBounds{maxBytes: int64(cfg.WorkspaceMaxMB) << 20, minFree: int64(cfg.MinFreeMB) << 20,
		maxFiles: int64(cfg.WorkspaceMaxFiles), homeMaxBytes: int64(cfg.AgentHomeMaxMB) << 20,
		fileSystems: []string{s.root, p.SessionDir}}
	if s.homes, err = filepath.Abs(p.HomesDir); err != nil || p.HomesDir == "" {
		return nil, fmt.Errorf("sandbox: homes directory %q: must be a usable path", p.HomesDir)
	}
	if err := os.MkdirAll(s.homes, homeDirPerm); err != nil {
		return nil, fmt.Errorf("sandbox: create the homes directory: %w", err)
	}
	sweepFreshHomes(s.homes)
	if err := s.reachable(s.root, s.homes); err != nil {
		return nil, err
	}
	if err := s.openToolCaches(cfg.ToolCacheMB); err != nil {
		return nil, err
	}
	for _, name := range cfg.CommandEnv {
		if err := checkEnvName(name); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	s.envNames = append([]string(nil), cfg.CommandEnv...)
	s.registry = registryNames(p.Environ, s.envNames)
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
	if err := s.prepareJail(ctx); err != nil {
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
	if err := s.ownHome(home); err != nil {
		return "", err
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
	env := append(CommandEnv(environ, s.envNames, home, tmp), s.trustEnv()...)
	if s.Network() == NetProxy {
		env = append(env, netproxy.Env(s.allow)...)
	}
	return env
}

// Command returns the program and arguments that run argv for the workspace
// dir: argv itself without bubblewrap, else bwrap around it. infoFD, when
// non-negative, is the descriptor bwrap reports its namespace's first
// process on (see InitPID).
func (s *Sandbox) Command(dir, home string, infoFD int, argv []string) (string, []string) {
	return s.CommandReadOnly(dir, home, infoFD, ReadOnly{}, argv)
}

// ReadOnly is what a command may read but not write (docs/guards.md#protected-paths).
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
	return s.bwrap, s.args(s.realDir(dir), home, "", infoFD, argv, ro, nil)
}

// realDir is what dir leads to: bwrap mounts over that.
func (s *Sandbox) realDir(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
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

// Network is the network mode commands get: NetProxy, NetOff or NetHost
// under bubblewrap; without it the host's network, whatever was asked.
func (s *Sandbox) Network() string {
	if s == nil || s.mode != ModeBwrap {
		return NetHost
	}
	return s.network
}

// AllowHosts is the proxy's allowlist as configured ("" allows every
// public destination).
func (s *Sandbox) AllowHosts() string {
	if s == nil {
		return ""
	}
	return s.allow.String()
}

// RegistryEnv names the package-registry variables of the worker's
// environment that commands get without RALPH_COMMAND_ENV: the start
// line's registryEnv, names only, as everywhere these variables are shown.
func (s *Sandbox) RegistryEnv() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.registry...)
}

// Mirrors are the package registries commands reach beyond public
// addresses; none while RALPH_SANDBOX_ALLOW_HOSTS decides alone.
func (s *Sandbox) Mirrors() []netproxy.Mirror {
	if s == nil {
		return nil
	}
	return s.allow.Mirrors()
}

// Limits says which resource limits hold, for the start line; notLimited
// names the ones that do not, and why.
func (s *Sandbox) Limits() (enforced []string, notLimited []string, why string) {
	if s == nil {
		return nil, []string{"memory", "pids", "/tmp"}, "no sandbox"
	}
	if s.mode == ModeBwrap {
		enforced = append(enforced, fmt.Sprintf("/tmp and /dev/shm %d MB each", s.tmpBytes>>20))
	} else {
		notLimited = append(notLimited, "/tmp (commands write the worker's own /tmp)")
	}
	have := s.cg.Enforced()
	for _, c := range []string{cgroup.Memory, cgroup.Pids} {
		if !slices.Contains(have, c) {
			notLimited = append(notLimited, c)
		}
	}
	if len(have) > 0 {
		enforced = append(enforced, s.cg.Describe())
	}
	return enforced, notLimited, s.cgWhy
}
