package activities

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Directory permissions: workspaces are shared with the commands the agent
// runs; session files (transcripts, locks) are the worker's own.
const (
	workspaceDirPerm = 0o755
	sessionDirPerm   = 0o700
	// locksDirName is the directory under SessionDir that holds lock files.
	locksDirName = "locks"
	// homesDirName is the directory under SessionDir that holds the private
	// HOME of each workspace: outside every workspace, and hidden from
	// commands like the rest of the session directory.
	homesDirName = "homes"
)

// Activities are the Temporal activities of a Ralph worker. One value serves
// every round the worker runs; it holds only its configuration.
type Activities struct {
	cfg Config
	git *gitws.Git // nil when git checkpoints are off
	// laneCaches are passing lane verifies' tool caches awaiting their
	// lane's landing (campaign_lanes.go).
	laneCaches laneCaches
	// released wakes rounds waiting for a workspace lock (lock.go).
	released lockReleases
	// lockPoll is how often a busy lock is tried again (lockPollInterval
	// when zero); a test makes it long to see that a release wakes.
	lockPoll time.Duration
	// client reads a campaign's task loops (CheckTaskLoops); nil until the
	// worker hands it over (UseClient).
	client client.Client
}

// New checks cfg and creates the workspace root and the session directory
// (with its locks directory). The directories are made absolute, and the
// session directory must lie outside the workspace root (and vice versa):
// transcripts and locks may never be reachable from a workspace.
func New(cfg Config) (*Activities, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	var err error
	if cfg.WorkspaceRoot, err = makeDir(cfg.WorkspaceRoot, workspaceDirPerm, "workspace root"); err != nil {
		return nil, err
	}
	if cfg.SessionDir, err = makeDir(cfg.SessionDir, sessionDirPerm, "session directory"); err != nil {
		return nil, err
	}
	if Within(cfg.SessionDir, cfg.WorkspaceRoot) || Within(cfg.WorkspaceRoot, cfg.SessionDir) {
		return nil, fmt.Errorf("activities config: the session directory %s and the workspace root %s must not contain one another (transcripts must stay outside every workspace)",
			cfg.SessionDir, cfg.WorkspaceRoot)
	}
	if err := os.MkdirAll(filepath.Join(cfg.SessionDir, locksDirName), sessionDirPerm); err != nil {
		return nil, fmt.Errorf("activities config: create the locks directory: %w", err)
	}
	// The probe of auto and bwrap modes runs here, once per worker.
	cfg.Sandbox.ProtectGit = cfg.Git.Enabled()
	sb, err := sandbox.New(context.Background(), cfg.Sandbox, sandbox.Paths{
		WorkspaceRoot: cfg.WorkspaceRoot, SessionDir: cfg.SessionDir,
		HomesDir: filepath.Join(cfg.SessionDir, homesDirName), Environ: os.Environ(),
	})
	if err != nil {
		return nil, fmt.Errorf("activities config: %w", err)
	}
	cfg.Agent.Sandbox = sb
	if cfg.Git.Enabled() {
		cfg.Limits.Git = cfg.Git.Mode
	}
	// A tree the worker's git writes out is held to a workspace's bounds.
	cfg.Git.MaxTreeBytes, cfg.Git.MaxTreeFiles = sb.WorkspaceBounds()
	a := &Activities{cfg: cfg}
	if cfg.Git.Enabled() {
		if a.git, err = gitws.New(cfg.Git, filepath.Join(cfg.SessionDir, gitHooksDirName)); err != nil {
			return nil, fmt.Errorf("activities config: %w", err)
		}
		sweepScratches(cfg.WorkspaceRoot)
		// Commands running as another uid than the worker's: merge and lane
		// verifies are lent their trees from private copies (gitws/treecopy.go).
		if uid, gid := sb.UID(); sb.Mode() == sandbox.ModeBwrap && uid != os.Geteuid() {
			a.git.LendTreesTo(uid, gid)
		}
	}
	return a, nil
}

// Git is the worker's own git (nil when RALPH_GIT=off).
func (a *Activities) Git() *gitws.Git { return a.git }

// Sandbox is how this worker runs commands (Mode, and Fallback when auto
// mode found no working bubblewrap).
func (a *Activities) Sandbox() *sandbox.Sandbox { return a.cfg.Agent.Sandbox }

func checkConfig(cfg Config) error {
	positive := []struct {
		name  string
		value int
	}{
		{"limits.maxRounds", cfg.Limits.MaxRounds}, {"limits.maxHandoffChars", cfg.Limits.MaxHandoffChars},
		{"limits.maxObjectiveChars", cfg.Limits.MaxObjectiveChars}, {"limits.roundTimeoutSeconds", cfg.Limits.RoundTimeoutSeconds},
		{"limits.heartbeatTimeoutSeconds", cfg.Limits.HeartbeatTimeoutSeconds}, {"limits.roundAttempts", cfg.Limits.RoundAttempts},
		{"limits.roundsPerRun", cfg.Limits.RoundsPerRun}, {"reviewDiffChars", cfg.ReviewDiffChars},
		{"transcriptMaxMB", cfg.TranscriptMaxMB},
	}
	for _, p := range positive {
		if p.value <= 0 {
			return fmt.Errorf("activities config: %s must be positive, got %d", p.name, p.value)
		}
	}
	switch {
	case cfg.WorkspaceRoot == "":
		return fmt.Errorf("activities config: workspace root is required")
	case cfg.SessionDir == "":
		return fmt.Errorf("activities config: session directory is required")
	case cfg.HeartbeatInterval <= 0:
		return fmt.Errorf("activities config: heartbeat interval must be positive, got %s", cfg.HeartbeatInterval)
	case cfg.HeartbeatInterval >= time.Duration(cfg.Limits.HeartbeatTimeoutSeconds)*time.Second:
		return fmt.Errorf("activities config: heartbeat interval %s must be shorter than the heartbeat timeout of %d s",
			cfg.HeartbeatInterval, cfg.Limits.HeartbeatTimeoutSeconds)
	}
	if err := cfg.Agent.Validate(); err != nil {
		return fmt.Errorf("activities config: %w", err)
	}
	if _, err := tools.ParseProtected(cfg.Limits.ProtectedPaths); err != nil {
		return fmt.Errorf("activities config: RALPH_PROTECTED_PATHS: %w", err)
	}
	if err := cfg.Git.Validate(); err != nil {
		return fmt.Errorf("activities config: %w", err)
	}
	return nil
}

// makeDir creates dir and returns its absolute, symlink-free path.
func makeDir(dir string, perm os.FileMode, what string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("activities config: %s %q: %w", what, dir, err)
	}
	if err := os.MkdirAll(abs, perm); err != nil {
		return "", fmt.Errorf("activities config: create the %s: %w", what, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("activities config: resolve the %s: %w", what, err)
	}
	return real, nil
}

// Within reports whether path lies inside (or is) dir.
func Within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// Register registers ResolveLimits (run by the workflow as a local
// activity) and RunRound under their stable names.
func (a *Activities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.ResolveLimits, activity.RegisterOptions{Name: ResolveLimitsName})
	r.RegisterActivityWithOptions(a.RunRound, activity.RegisterOptions{Name: RunRoundName})
	r.RegisterActivityWithOptions(a.ReviewCompletion, activity.RegisterOptions{Name: ReviewCompletionName})
	r.RegisterActivityWithOptions(a.PlanWave, activity.RegisterOptions{Name: PlanWaveName})
	r.RegisterActivityWithOptions(a.PrepareTask, activity.RegisterOptions{Name: PrepareTaskName})
	r.RegisterActivityWithOptions(a.MergeTask, activity.RegisterOptions{Name: MergeTaskName})
	r.RegisterActivityWithOptions(a.ReadTasks, activity.RegisterOptions{Name: ReadTasksName})
	r.RegisterActivityWithOptions(a.Notify, activity.RegisterOptions{Name: NotifyName})
	r.RegisterActivityWithOptions(a.AdoptCandidate, activity.RegisterOptions{Name: AdoptCandidateName})
	r.RegisterActivityWithOptions(a.CheckTaskLoops, activity.RegisterOptions{Name: CheckTaskLoopsName})
}

// WithCurrentBehaviours switches on every campaign (and candidates) behaviour this build
// has: a run records them in its limits, so a history recorded before one
// existed replays without it.
func WithCurrentBehaviours(l Limits) Limits {
	l.CampaignShares, l.CampaignEvidence, l.CampaignHeldApart, l.CampaignQueueApart = true, true, true, true
	l.CampaignTaskFaults, l.CampaignHeadRed, l.CampaignGitBound = true, true, true
	l.CampaignNoDrain, l.CampaignVerifyTimes, l.CampaignGitHeartbeat = true, true, true
	l.CampaignDropLanes, l.CandidateAdoptLocal = true, true
	return l
}

// ResolveLimits returns the deployment's limits. The workflow runs it once
// per run as a local activity, so the limits are recorded in history and a
// replay never depends on the current worker's configuration.
func (a *Activities) ResolveLimits(context.Context) (Limits, error) {
	l := WithCurrentBehaviours(a.cfg.Limits)
	// Only a worker with a receiver makes runs notify: the events, never the URL.
	if a.cfg.NotifyURL != "" {
		l.NotifyEvents = a.cfg.NotifyEvents
	}
	if a.git != nil && l.MaxCandidates > 1 { // only a worker that can run candidates
		l.CandidateDefaultAgent, l.CandidateDefaultModels = a.candidateDefaults()
	}
	return l, nil
}

// WorkspaceRoot is the absolute directory that holds every workspace.
func (a *Activities) WorkspaceRoot() string { return a.cfg.WorkspaceRoot }

// TranscriptDir is the directory holding the transcripts of a workspace's
// rounds, one file per attempt: round-<R>-attempt-<A>-<session id>.jsonl.
func (a *Activities) TranscriptDir(workspace string) string {
	return filepath.Join(a.cfg.SessionDir, names.Flat(workspace))
}
