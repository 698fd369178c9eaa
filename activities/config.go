package activities

import (
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Config is everything a worker's activities need; the worker builds it from
// env and flags (app/config) and validates it before starting.
type Config struct {
	// Limits are returned by ResolveLimits and so recorded in each run's history.
	Limits Limits
	// WorkspaceRoot holds every workspace: <root>/<RoundInput.Workspace>.
	WorkspaceRoot string
	// SessionDir holds transcripts, workspace locks and the git object cache
	// (internal/gitws/cache.go), outside every workspace.
	SessionDir string
	// Agent is handed to every session as is: the model endpoint, the
	// session's bounds and the tool limits.
	Agent agent.Config
	// HeartbeatInterval is how often a running round heartbeats; keep it well
	// under Limits.HeartbeatTimeoutSeconds.
	HeartbeatInterval time.Duration
	// RecordHeartbeat builds, for one attempt, how its heartbeats are sent.
	// Every worker uses HeartbeatThroughClient (a returned call means the
	// server has them, so a session's next model request can wait for its
	// last answer's usage to be recorded); nil means HeartbeatThroughSDK,
	// for the SDK's test environment, whose client is a mock.
	RecordHeartbeat HeartbeatRecorder
	// Sandbox is how the model's commands and the verify command run.
	Sandbox sandbox.Config
	// Git is how the workspace is checkpointed.
	Git gitws.Config
	// ReviewModel is the independent reviewer's model on the same endpoint
	// (RALPH_REVIEW_MODEL); empty means Agent.Model.
	ReviewModel string
	// PlanModel is a campaign planner's model (RALPH_PLAN_MODEL); empty
	// means the round's (Agent.Model, or Agents.Model for a CLI).
	PlanModel string
	// Agents chooses the provider of rounds and reviews: the builtin
	// session or a coding-agent CLI (docs/agents.md).
	Agents cli.Settings
	// ReviewDiffChars bounds the run's change shown to the reviewer, in code
	// points (RALPH_REVIEW_DIFF_CHARS).
	ReviewDiffChars int
	// NotifyURL receives the runs' events (RALPH_NOTIFY_URL): a secret,
	// never in history, logs or status. NotifyEvents are the events sent
	// (RALPH_NOTIFY_EVENTS); UIURL is the Temporal UI runs link to.
	NotifyURL    string
	NotifyEvents []string
	UIURL        string
	// TranscriptMaxMB caps the transcript of one round attempt
	// (RALPH_TRANSCRIPT_MAX_MB); past it one line says what was left out.
	TranscriptMaxMB int
}

// Default directories, relative to the worker's working directory.
const (
	DefaultWorkspaceRoot     = ".ralph/workspaces"
	DefaultSessionDir        = ".ralph/sessions"
	DefaultHeartbeatInterval = time.Second
	DefaultReviewDiffChars   = 60000
	// DefaultNotifyEvents is RALPH_NOTIFY_EVENTS's default.
	DefaultNotifyEvents = "complete,blocked,failed,budget-limited,stopped,waiting,awaiting-approval"
)

// DefaultConfig is the defaults with relative directories. The session's own
// defaults live in agent.DefaultConfig, the tools' in tools.DefaultLimits.
func DefaultConfig() Config {
	return Config{
		Limits:            DefaultLimits(),
		WorkspaceRoot:     DefaultWorkspaceRoot,
		SessionDir:        DefaultSessionDir,
		Agent:             agent.DefaultConfig(),
		HeartbeatInterval: DefaultHeartbeatInterval,
		Sandbox:           sandbox.DefaultConfig(),
		Git:               gitws.DefaultConfig(),
		ReviewDiffChars:   DefaultReviewDiffChars,
		NotifyEvents:      strings.Split(DefaultNotifyEvents, ","),
		Agents:            cli.DefaultSettings(),
		TranscriptMaxMB:   agent.DefaultTranscriptMaxBytes >> 20,
	}
}
