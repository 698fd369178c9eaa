package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// Worker is everything the worker binary needs: the activities'
// configuration and the worker's own settings.
type Worker struct {
	// Activities is handed to activities.New. Its directories are absolute.
	Activities activities.Config
	// TaskQueue is the queue the worker polls (RALPH_TASK_QUEUE).
	TaskQueue string
	// ConcurrentRounds bounds the rounds one worker runs at once
	// (worker.Options.MaxConcurrentActivityExecutionSize).
	ConcurrentRounds int
	// MaxResultChars bounds any human-facing result text the worker renders.
	MaxResultChars int
	// StopTimeout is how long a stopping worker lets running rounds finish
	// before it cancels them (worker.Options.WorkerStopTimeout).
	StopTimeout time.Duration
	// ConnectTimeout is how long the worker keeps retrying an unreachable
	// Temporal server at start before it gives up.
	ConnectTimeout time.Duration
	// Demo runs the scripted local OpenAI-compatible server and points the
	// model configuration at it.
	Demo bool
	// MetricsAddress serves Prometheus /metrics when set (RALPH_METRICS_ADDRESS).
	MetricsAddress string
	// HealthAddress serves the /healthz and /readyz probes when set
	// (RALPH_HEALTH_ADDRESS).
	HealthAddress string
	// Connection overrides the standard TEMPORAL_* variables when set.
	Connection Connection
	// Versioning is the worker's Worker Deployment Versioning setup.
	Versioning Versioning
	// Warnings are said once at start: settings given in a form that is
	// still accepted but replaced.
	Warnings []string
	// LogLevel and LogFormat ("text" or "json") configure the slog handler.
	LogLevel  slog.Level
	LogFormat string
	// Tracing comes from the standard OTEL_* variables.
	Tracing Tracing
}

// Connection holds command-line overrides of the standard Temporal client
// variables; empty fields leave TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (and
// the envconfig file profile) in charge.
type Connection struct {
	Address   string
	Namespace string
	// EncryptionKeyFile, when set, encrypts every payload the client writes
	// (RALPH_ENCRYPTION_KEY_FILE).
	EncryptionKeyFile string
}

// Versioning: with Mode on the worker runs as Worker Deployment Version
// <DeploymentName>.<BuildID> and runs are pinned to the build that started
// them (docs/operations.md#worker-versioning-and-the-rolling-upgrade).
type Versioning struct {
	Mode           string // VersioningOn or VersioningOff
	DeploymentName string
	// BuildID is empty unless set: the worker derives it at start
	// (internal/buildid: VCS revision, else a hash of its executable).
	BuildID string
	// SetCurrent: SetCurrentIfNone, SetCurrentAlways or SetCurrentNever.
	SetCurrent string
	// Behavior: BehaviorAutoUpgrade (runs move to the current build at
	// their next workflow task) or BehaviorPinned (runs stay on their build
	// and continue as new onto a changed target at a round boundary).
	Behavior string
}

// Values of RALPH_VERSIONING and RALPH_SET_CURRENT.
const (
	VersioningOn          = "on"
	VersioningOff         = "off"
	SetCurrentIfNone      = "if-none"
	SetCurrentAlways      = "always"
	SetCurrentNever       = "never"
	BehaviorAutoUpgrade   = "auto-upgrade"
	BehaviorPinned        = "pinned"
	DefaultDeploymentName = "ralph"
)

// Defaults of the worker's own settings (the activities' defaults live in
// activities.DefaultConfig).
const (
	DefaultTaskQueue        = workflows.DefaultTaskQueue
	DefaultConcurrentRounds = 8
	DefaultMaxResultChars   = 16384
	DefaultStopTimeout      = 30 * time.Second
	DefaultConnectTimeout   = 60 * time.Second
	DefaultModelBaseURL     = "https://api.openai.com/v1"
)

// Environment variables of the model endpoint (a stable contract).
const (
	EnvModel   = "RALPH_MODEL"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvDemo    = "RALPH_DEMO"
	// EnvEncryptionKeyFile is read by the worker, the starter and the codec server.
	EnvEncryptionKeyFile = "RALPH_ENCRYPTION_KEY_FILE"
)

// DefaultWorker is the configuration with every default and relative
// directories (LoadWorker makes them absolute).
func DefaultWorker() Worker {
	a := activities.DefaultConfig()
	a.Agent.BaseURL = DefaultModelBaseURL
	a.RecordHeartbeat = activities.HeartbeatThroughClient
	return Worker{
		Activities:       a,
		TaskQueue:        DefaultTaskQueue,
		ConcurrentRounds: DefaultConcurrentRounds,
		MaxResultChars:   DefaultMaxResultChars,
		StopTimeout:      DefaultStopTimeout,
		ConnectTimeout:   DefaultConnectTimeout,
		LogLevel:         slog.LevelInfo,
		LogFormat:        "text",
		Versioning:       Versioning{Mode: VersioningOn, DeploymentName: DefaultDeploymentName, SetCurrent: SetCurrentIfNone, Behavior: BehaviorAutoUpgrade},
	}
}

// Ceilings of the limits that size what a run writes to history (see
// docs/reference.md, "Small history"): at them, with 4-byte characters,
// no payload the workflow writes passes 1 MiB.
const (
	RoundsPerRunCeiling      = 100
	MaxHandoffCharsCeiling   = 65536
	MaxObjectiveCharsCeiling = 262144
)

// setting is one configurable value: a flag that mirrors an env var.
type setting struct {
	flag  string // without dashes; empty means env only
	env   string // empty means flag only
	usage string
	// exactly one of these points into the Worker being built
	intp  func(*Worker) *int
	secp  func(*Worker) *time.Duration // whole seconds
	strp  func(*Worker) *string
	boolp func(*Worker) *bool
	listp func(*Worker) *[]string // split on ':' and ','
	// optional ints may stay unset (0); a value given must still be positive.
	optional bool
	// ceiling, when set, is the most an int may be: the bounds that keep
	// every payload a run writes to history small.
	ceiling int
	// custom parses values that are neither (log level).
	custom func(w *Worker, source, value string) error
	def    func(w *Worker) string
	// secret values are never printed (not even their defaults).
	secret bool
}

func workerSettings() []setting {
	lim := func(w *Worker) *activities.Limits { return &w.Activities.Limits }
	return []setting{
		{flag: "max-rounds", env: "RALPH_MAX_ROUNDS", usage: "default and ceiling of the round cap of one run",
			intp: func(w *Worker) *int { return &lim(w).MaxRounds }},
		{flag: "max-handoff-chars", env: "RALPH_MAX_HANDOFF_CHARS", usage: "max compact-JSON code points of one handoff report (at most 65536)",
			intp: func(w *Worker) *int { return &lim(w).MaxHandoffChars }, ceiling: MaxHandoffCharsCeiling},
		{flag: "max-result-chars", env: "RALPH_MAX_RESULT_CHARS", usage: "max code points of a human-facing result text",
			intp: func(w *Worker) *int { return &w.MaxResultChars }},
		{flag: "max-objective-chars", env: "RALPH_MAX_OBJECTIVE_CHARS", usage: "max code points of an objective (at most 262144)",
			intp: func(w *Worker) *int { return &lim(w).MaxObjectiveChars }, ceiling: MaxObjectiveCharsCeiling},
		{flag: "rounds-per-run", env: "RALPH_ROUNDS_PER_RUN", usage: "rounds per workflow run before continue-as-new (at most 100)",
			intp: func(w *Worker) *int { return &lim(w).RoundsPerRun }, ceiling: RoundsPerRunCeiling},
		{flag: "round-timeout-seconds", env: "RALPH_ROUND_TIMEOUT_SECONDS", usage: "bound of one attempt of one round",
			intp: func(w *Worker) *int { return &lim(w).RoundTimeoutSeconds }},
		{flag: "heartbeat-timeout-seconds", env: "RALPH_HEARTBEAT_TIMEOUT_SECONDS", usage: "silence after which a running round counts as lost and is retried (a cancel does not wait for it: rounds heartbeat every second)",
			intp: func(w *Worker) *int { return &lim(w).HeartbeatTimeoutSeconds }},
		{flag: "round-attempts", env: "RALPH_ROUND_ATTEMPTS", usage: "attempts of one round after infrastructure failures",
			intp: func(w *Worker) *int { return &lim(w).RoundAttempts }},
		{flag: "max-model-calls", env: "RALPH_MAX_MODEL_CALLS", usage: "model calls allowed in one round",
			intp: func(w *Worker) *int { return &w.Activities.Agent.MaxModelCalls }},
		{flag: "model-call-timeout-seconds", env: "RALPH_MODEL_CALL_TIMEOUT_SECONDS", usage: "bound of one model call",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.CallTimeout }},
		{flag: "model-retries", env: "RALPH_MODEL_RETRIES", usage: "in-round retries of a transient model error",
			intp: func(w *Worker) *int { return &w.Activities.Agent.TransientRetries }},
		{flag: "max-retry-after-seconds", env: "RALPH_MAX_RETRY_AFTER_SECONDS", usage: "cap on an honoured Retry-After",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.MaxRetryAfter }},
		{flag: "command-timeout-seconds", env: "RALPH_COMMAND_TIMEOUT_SECONDS", usage: "default timeout of one run_command",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.ToolLimits.CommandTimeout }},
		{flag: "max-command-timeout-seconds", env: "RALPH_MAX_COMMAND_TIMEOUT_SECONDS", usage: "largest timeout_seconds a model may ask of run_command",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.ToolLimits.MaxCommandTimeout }},
		{flag: "command-output-chars", env: "RALPH_COMMAND_OUTPUT_CHARS", usage: "run_command output cap (head and tail kept)",
			intp: func(w *Worker) *int { return &w.Activities.Agent.ToolLimits.OutputCap }},
		{flag: "context-tokens", env: "RALPH_CONTEXT_TOKENS", usage: "the model's context window in tokens; the round hands off at 80 %",
			intp: func(w *Worker) *int { return &w.Activities.Agent.ContextTokens }},
		{flag: "max-output-tokens", env: "RALPH_MAX_OUTPUT_TOKENS", usage: "output-token limit sent with each model request", optional: true,
			intp: func(w *Worker) *int { return &w.Activities.Agent.MaxOutputTokens }},
		{flag: "echo-reasoning", env: "RALPH_ECHO_REASONING", usage: "send reasoning_content back on assistant turns (false for providers that refuse it)",
			boolp: func(w *Worker) *bool { return &w.Activities.Agent.EchoReasoning }},
		{flag: "verify-command", env: "RALPH_VERIFY_COMMAND", usage: "command that must pass (exit 0) before a complete report is accepted, unless the run names its own",
			strp: func(w *Worker) *string { return &lim(w).VerifyCommand }},
		{flag: "verify-timeout-seconds", env: "RALPH_VERIFY_TIMEOUT_SECONDS", usage: "bound of one verify command run",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.VerifyTimeout }},
		{flag: "verify-attempts", env: "RALPH_VERIFY_ATTEMPTS", usage: "failed verifications per round before complete is refused outright",
			intp: func(w *Worker) *int { return &w.Activities.Agent.VerifyAttempts }},
		{flag: "protected-paths", env: "RALPH_PROTECTED_PATHS", usage: "comma-separated gitignore-style patterns the model may read but never change (on top of a run's protectedPaths)",
			custom: func(w *Worker, source, value string) error {
				patterns := splitList(value, ",")
				if _, err := tools.ParseProtected(patterns); err != nil {
					return fmt.Errorf("%s=%q: %v", source, value, err)
				}
				lim(w).ProtectedPaths = patterns
				return nil
			},
			def: func(w *Worker) string { return strings.Join(lim(w).ProtectedPaths, ",") }},
		{flag: "review", env: "RALPH_REVIEW", usage: "off or on: an independent reviewer checks every accepted completion (a run's review input overrides)",
			custom: func(w *Worker, source, value string) error {
				switch value {
				case "on":
					lim(w).Review = true
				case "off":
					lim(w).Review = false
				default:
					return fmt.Errorf("%s=%q: must be one of off, on", source, value)
				}
				return nil
			},
			def: func(w *Worker) string {
				if lim(w).Review {
					return "on"
				}
				return "off"
			}},
		{flag: "approve", env: "RALPH_APPROVE", usage: "none, complete or rounds:N: a verified complete (and every N-th round) waits for an operator's approve or reject update (a run's approve input overrides)",
			custom: func(w *Worker, source, value string) error {
				if _, err := workflows.ParseApprove(value); err != nil || value == "" {
					return fmt.Errorf("%s=%q: must be none, complete or rounds:N with N a positive integer", source, value)
				}
				lim(w).Approve = value
				if value == workflows.ApproveNone {
					lim(w).Approve = ""
				}
				return nil
			},
			def: func(w *Worker) string {
				if lim(w).Approve == "" {
					return workflows.ApproveNone
				}
				return lim(w).Approve
			}},
		{flag: "approval-timeout-hours", env: "RALPH_APPROVAL_TIMEOUT_HOURS", usage: "an approval wait longer than this ends the run stopped (unset: a wait has no end)",
			optional: true, intp: func(w *Worker) *int { return &lim(w).ApprovalTimeoutHours }},
		// The URL has no flag: a webhook URL is a credential (ps, shell history).
		{env: "RALPH_NOTIFY_URL", usage: "where run events are POSTed as JSON (a Slack or Mattermost incoming webhook; env only, never logged)", secret: true,
			custom: func(w *Worker, source, value string) error {
				if u, err := url.Parse(value); value != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
					return fmt.Errorf("%s: must be an http or https URL", source)
				}
				w.Activities.NotifyURL = value
				return nil
			}},
		{flag: "notify-events", env: "RALPH_NOTIFY_EVENTS", usage: "comma-separated events sent to RALPH_NOTIFY_URL (campaigns add merged, returned, paused)",
			custom: func(w *Worker, source, value string) error {
				events := splitList(value, ",")
				for _, e := range events {
					if !slices.Contains(notifyEvents, e) {
						return fmt.Errorf("%s=%q: %q is not an event (one of %s)", source, value, e, strings.Join(notifyEvents, ", "))
					}
				}
				w.Activities.NotifyEvents = events
				return nil
			},
			def: func(w *Worker) string { return strings.Join(w.Activities.NotifyEvents, ",") }},
		{flag: "ui-url", env: "RALPH_UI_URL", usage: "the Temporal UI's base URL: notifications link to the run there",
			strp: func(w *Worker) *string { return &w.Activities.UIURL }},
		{flag: "review-model", env: "RALPH_REVIEW_MODEL", usage: "the reviewer's model on the same endpoint (empty: RALPH_MODEL)",
			strp: func(w *Worker) *string { return &w.Activities.ReviewModel }},
		{flag: "plan-model", env: "RALPH_PLAN_MODEL", usage: "a campaign planner's model (empty: the round's, RALPH_MODEL or RALPH_AGENT_MODEL)",
			strp: func(w *Worker) *string { return &w.Activities.PlanModel }},
		{flag: "review-diff-chars", env: "RALPH_REVIEW_DIFF_CHARS", usage: "max code points of the run's change (diff stat and patch) shown to the reviewer",
			intp: func(w *Worker) *int { return &w.Activities.ReviewDiffChars }},
		{flag: "sandbox", env: "RALPH_SANDBOX", usage: "auto, bwrap or off: how the model's commands are isolated",
			custom: enum(func(w *Worker) *string { return &w.Activities.Sandbox.Mode }, sandbox.ModeAuto, sandbox.ModeBwrap, sandbox.ModeOff),
			def:    func(w *Worker) string { return w.Activities.Sandbox.Mode }},
		{flag: "sandbox-network", env: "RALPH_SANDBOX_NETWORK", usage: "proxy, off or host: commands reach the network only through the worker's filtering proxy, not at all, or as the host does",
			custom: sandboxNetwork, def: func(w *Worker) string { return w.Activities.Sandbox.Network }},
		{flag: "sandbox-allow-hosts", env: "RALPH_SANDBOX_ALLOW_HOSTS", usage: "comma-separated host, *.domain, host:port, ip or ip:port: the only destinations the proxy allows (private ones included); unset: public addresses, and the package registries the worker's GOPROXY, npm_config_registry, PIP_INDEX_URL and the like name also at private and special-purpose ones",
			custom: func(w *Worker, source, value string) error {
				items := splitList(value, ",") // host:port holds ':'
				if _, err := netproxy.ParseAllowList(items); err != nil {
					return fmt.Errorf("%s: %v", source, err)
				}
				w.Activities.Sandbox.AllowHosts = items
				return nil
			},
			def: func(w *Worker) string { return strings.Join(w.Activities.Sandbox.AllowHosts, ",") }},
		{flag: "sandbox-tmp-mb", env: "RALPH_SANDBOX_TMP_MB", usage: "size in MB of the sandbox's private /tmp and of its /dev/shm",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.TmpMB }},
		{flag: "sandbox-memory-mb", env: "RALPH_SANDBOX_MEMORY_MB", usage: "memory limit in MB of each command with all it starts (its own cgroup)",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.MemoryMB }},
		{flag: "sandbox-pids", env: "RALPH_SANDBOX_PIDS", usage: "limit on the processes and threads of each command (its own cgroup)",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.Pids }},
		{flag: "sandbox-uid", env: "RALPH_SANDBOX_UID", usage: "host uid a root worker runs commands as (never 0; a non-root worker runs them as itself)",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.UID }},
		{flag: "sandbox-gid", env: "RALPH_SANDBOX_GID", usage: "host gid a root worker runs commands as (never 0)",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.GID }},
		{flag: "workspace-max-mb", env: "RALPH_WORKSPACE_MAX_MB", usage: "disk space in MB one workspace may use; a command past it is killed",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.WorkspaceMaxMB }},
		{flag: "min-free-mb", env: "RALPH_MIN_FREE_MB", usage: "MB kept free on the file systems of the workspaces and the session directory; a command past it is killed",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.MinFreeMB }},
		{flag: "workspace-max-files", env: "RALPH_WORKSPACE_MAX_FILES", usage: "files (inodes) one workspace and an agent CLI's home may hold; a command past it is killed",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.WorkspaceMaxFiles }},
		{flag: "agent-home-max-mb", env: "RALPH_AGENT_HOME_MAX_MB", usage: "disk space in MB an agent CLI's home may use; the attempt past it is killed and its home removed",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.AgentHomeMaxMB }},
		{flag: "tool-cache-mb", env: "RALPH_TOOL_CACHE_MB", usage: "MB the warm tool caches (Go build and module caches, npm, pip) of every line may hold together; the least recently used go first",
			intp: func(w *Worker) *int { return &w.Activities.Sandbox.ToolCacheMB }},
		{flag: "transcript-max-mb", env: "RALPH_TRANSCRIPT_MAX_MB", usage: "MB one round attempt's transcript may hold; past it one line says what was left out",
			intp: func(w *Worker) *int { return &w.Activities.TranscriptMaxMB }},
		{flag: "sandbox-hide", env: "RALPH_SANDBOX_HIDE", usage: "':'-separated paths made invisible to commands",
			listp: func(w *Worker) *[]string { return &w.Activities.Sandbox.Hide }},
		{flag: "sandbox-share", env: "RALPH_SANDBOX_SHARE", usage: "':'-separated paths mounted read-write into the sandbox (shared caches)",
			listp: func(w *Worker) *[]string { return &w.Activities.Sandbox.Share }},
		{flag: "command-env", env: "RALPH_COMMAND_ENV", usage: "extra environment variable names passed to commands (':' or ',' separated)",
			listp: func(w *Worker) *[]string { return &w.Activities.Sandbox.CommandEnv }},
		{flag: "max-run-tokens", env: "RALPH_MAX_RUN_TOKENS", usage: "ceiling and default of a run's token budget", optional: true,
			intp: func(w *Worker) *int { return &lim(w).MaxRunTokens }},
		{flag: "max-run-minutes", env: "RALPH_MAX_RUN_MINUTES", usage: "ceiling and default of a run's wall-clock budget", optional: true,
			intp: func(w *Worker) *int { return &lim(w).MaxRunMinutes }},
		{flag: "max-campaign-parallel", env: "RALPH_MAX_CAMPAIGN_PARALLEL", usage: "ceiling of a campaign's maxParallel (task loops running at once; at most 1000)",
			intp: func(w *Worker) *int { return &lim(w).MaxCampaignParallel }},
		{flag: "max-campaign-tasks", env: "RALPH_MAX_CAMPAIGN_TASKS", usage: "most tasks one campaign may hold (at most 5000)",
			intp: func(w *Worker) *int { return &lim(w).MaxCampaignTasks }},
		{flag: "merge-retry-minutes", env: "RALPH_MERGE_RETRY_MINUTES", usage: "how long each git step of a campaign (a merge, a task's preparation, an approved merge's landing) retries a failure that is not the task's (credentials, disk, network) before the campaign pauses",
			intp: func(w *Worker) *int { return &lim(w).MergeRetryMinutes }},
		{flag: "max-merge-lanes", env: "RALPH_MAX_MERGE_LANES", usage: "ceiling of a campaign's mergeLanes (prefixes of its merge queue verified at once; at most 16)",
			intp: func(w *Worker) *int { return &lim(w).MaxMergeLanes }},
		{flag: "max-waves", env: "RALPH_MAX_WAVES", usage: "ceiling of a planned campaign's maxWaves (planning rounds, each followed by its tasks)",
			intp: func(w *Worker) *int { return &lim(w).MaxWaves }},
		{flag: "max-wave-tasks", env: "RALPH_MAX_WAVE_TASKS", usage: "most tasks one wave's plan may hold (at most 1000)",
			intp: func(w *Worker) *int { return &lim(w).MaxWaveTasks }},
		{flag: "candidates", env: "RALPH_CANDIDATES", usage: "fresh agents each round runs at once on clones of the workspace, the verified one chosen (a run's candidates input overrides; more than 1 needs RALPH_GIT local or remote)",
			intp: func(w *Worker) *int { return &lim(w).Candidates }},
		{flag: "max-candidates", env: "RALPH_MAX_CANDIDATES", usage: "ceiling of a run's candidates (at most 16)",
			intp: func(w *Worker) *int { return &lim(w).MaxCandidates }},
		{flag: "candidate-agents", env: "RALPH_CANDIDATE_AGENTS", usage: "comma-separated providers cycled over a round's candidates (builtin, claude-code, codex, opencode; unset: RALPH_AGENT)",
			custom: candidateAgents,
			def:    func(w *Worker) string { return orNone(strings.Join(lim(w).CandidateAgents, ",")) }},
		{flag: "candidate-models", env: "RALPH_CANDIDATE_MODELS", usage: "comma-separated models cycled over a round's candidates (unset: RALPH_MODEL, or RALPH_AGENT_MODEL for a CLI)",
			custom: func(w *Worker, _, value string) error {
				lim(w).CandidateModels = splitList(value, ",")
				return nil
			},
			def: func(w *Worker) string { return orNone(strings.Join(lim(w).CandidateModels, ",")) }},
		{flag: "candidate-score", env: "RALPH_CANDIDATE_SCORE", usage: "none or verify: with verify, candidates that did not complete are ranked by a run of the verify command on their tree",
			custom: candidateScore, def: func(w *Worker) string { return cmp.Or(lim(w).CandidateScore, activities.CandidateScoreNone) }},
		{flag: "max-idle-rounds", env: "RALPH_MAX_IDLE_ROUNDS", usage: "consecutive continue rounds without a workspace change that end a run",
			intp: func(w *Worker) *int { return &lim(w).MaxIdleRounds }},
		{flag: "max-wait-minutes", env: "RALPH_MAX_WAIT_MINUTES", usage: "longest durable wait after a deferred round (rate limit, quota, outage); a quota waits this long",
			intp: func(w *Worker) *int { return &lim(w).MaxWaitMinutes }},
		{flag: "max-deferrals", env: "RALPH_MAX_DEFERRALS", usage: "consecutive deferrals of one round before the run fails with RoundFailed",
			intp: func(w *Worker) *int { return &lim(w).MaxDeferrals }},
		{flag: "max-pause-hours", env: "RALPH_MAX_PAUSE_HOURS", usage: "a run paused longer ends stopped (reason: paused for more than N hours), so a forgotten pause never keeps a run open for ever",
			intp: func(w *Worker) *int { return &lim(w).MaxPauseHours }},
		{flag: "fallback-models", env: "RALPH_FALLBACK_MODELS", usage: "comma-separated models of the same endpoint that take over a round's conversation, in order, when the current model's retries are spent",
			custom: func(w *Worker, _, value string) error {
				w.Activities.Agent.FallbackModels = splitList(value, ",") // model names may hold ':', as Ollama's "qwen2.5-coder:32b"
				return nil
			},
			def: func(w *Worker) string { return strings.Join(w.Activities.Agent.FallbackModels, ",") }},
		{flag: "agent", env: "RALPH_AGENT", usage: "the provider of every round's fresh agent: builtin, claude-code, codex or opencode (docs/agents.md)",
			custom: enum(func(w *Worker) *string { return &w.Activities.Agents.Agent }, cli.Kinds()...),
			def:    func(w *Worker) string { return w.Activities.Agents.Agent }},
		{flag: "agent-command", env: "RALPH_AGENT_COMMAND", usage: "the CLI binary of RALPH_AGENT (unset: its usual name on PATH)",
			strp: func(w *Worker) *string { return &w.Activities.Agents.Command }},
		{flag: "agent-model", env: "RALPH_AGENT_MODEL", usage: "the model name the CLI asks the gateway for (unset: RALPH_MODEL)",
			strp: func(w *Worker) *string { return &w.Activities.Agents.Model }},
		{flag: "agent-idle-seconds", env: "RALPH_AGENT_IDLE_SECONDS", usage: "a CLI silent this long (no model request, no report call) gets its one continuation",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agents.Idle }},
		{flag: "agent-max-inflight", env: "RALPH_AGENT_MAX_INFLIGHT", usage: "requests of one CLI attempt the model gateway has in flight at most; more wait",
			intp: func(w *Worker) *int { return &w.Activities.Agents.MaxInflight }},
		{flag: "agent-max-request-mb", env: "RALPH_AGENT_MAX_REQUEST_MB", usage: "largest request body a CLI may send the model gateway, in MB (413 beyond)",
			intp: func(w *Worker) *int { return &w.Activities.Agents.MaxRequestMB }},
		{flag: "review-agent", env: "RALPH_REVIEW_AGENT", usage: "the reviewer's provider (unset: RALPH_AGENT)",
			custom: enum(func(w *Worker) *string { return &w.Activities.Agents.Review }, cli.Kinds()...),
			def:    func(w *Worker) string { return orNone(w.Activities.Agents.Review) }},
		{flag: "plan-agent", env: "RALPH_PLAN_AGENT", usage: "a campaign planner's provider (unset: RALPH_AGENT)",
			custom: enum(func(w *Worker) *string { return &w.Activities.Agents.Plan }, cli.Kinds()...),
			def:    func(w *Worker) string { return orNone(w.Activities.Agents.Plan) }},
		{env: "ANTHROPIC_BASE_URL", usage: "Anthropic Messages endpoint the gateway forwards claude-code's requests to",
			strp: func(w *Worker) *string { return &w.Activities.Agents.AnthropicBaseURL }},
		{env: "ANTHROPIC_API_KEY", usage: "Anthropic API key for claude-code (env only; never given to the CLI, never logged)", secret: true,
			strp: func(w *Worker) *string { return &w.Activities.Agents.AnthropicAPIKey }},
		{flag: "model-idle-seconds", env: "RALPH_MODEL_IDLE_SECONDS", usage: "a streamed model call that sends no byte for this long is a transient error (retried)",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.IdleTimeout }},
		{flag: "model-stream", env: "RALPH_MODEL_STREAM", usage: "stream model answers (off for a provider that cannot stream)",
			boolp: func(w *Worker) *bool { return &w.Activities.Agent.Stream }},
		{flag: "wire-api", env: "RALPH_WIRE_API", usage: "chat (chat completions) or responses (the OpenAI Responses API, store off)",
			custom: enum(func(w *Worker) *string { return &w.Activities.Agent.WireAPI }, agent.WireChat, agent.WireResponses),
			def:    func(w *Worker) string { return w.Activities.Agent.WireAPI }},
		{flag: "reasoning-effort", env: "RALPH_REASONING_EFFORT", usage: "low, medium or high: reasoning effort sent to reasoning models (unset: none sent)",
			custom: enum(func(w *Worker) *string { return &w.Activities.Agent.ReasoningEffort }, "low", "medium", "high"),
			def:    func(w *Worker) string { return orNone(w.Activities.Agent.ReasoningEffort) }},
		{flag: "extra-body", env: "RALPH_EXTRA_BODY", usage: "JSON object merged into every model request body (e.g. {\"enable_thinking\": false})",
			custom: extraBody, def: func(w *Worker) string { return orNone(extraBodyText(w.Activities.Agent.ExtraBody)) }},
		{flag: "max-tokens-field", env: "RALPH_MAX_TOKENS_FIELD", usage: "max_tokens or max_completion_tokens: the field RALPH_MAX_OUTPUT_TOKENS is sent in (unset: max_completion_tokens for OpenAI reasoning models only)",
			custom: enum(func(w *Worker) *string { return &w.Activities.Agent.MaxTokensFieldName }, agent.MaxTokensField, agent.MaxCompletionTokensField),
			def:    func(w *Worker) string { return orNone(w.Activities.Agent.MaxTokensFieldName) }},
		{flag: "search-attributes", env: "RALPH_SEARCH_ATTRIBUTES", usage: "upsert the RalphPhase/RalphRound/RalphOutcome/RalphWorkspace/RalphCampaign search attributes",
			boolp: func(w *Worker) *bool { return &lim(w).SearchAttributes }},
		{flag: "git", env: "RALPH_GIT", usage: "off, local or remote: git checkpoints of the workspace",
			custom: enum(func(w *Worker) *string { return &w.Activities.Git.Mode }, gitws.ModeOff, gitws.ModeLocal, gitws.ModeRemote),
			def:    func(w *Worker) string { return w.Activities.Git.Mode }},
		{flag: "git-remote", env: "RALPH_GIT_REMOTE", usage: "remote every round fetches from and pushes to (RALPH_GIT=remote)",
			strp: func(w *Worker) *string { return &w.Activities.Git.Remote }},
		{flag: "git-author", env: "RALPH_GIT_AUTHOR", usage: "author and committer of checkpoint commits",
			strp: func(w *Worker) *string { return &w.Activities.Git.Author }},
		{flag: "git-memory-mb", env: gitws.SettingMemory, usage: "memory limit in MB of each of the worker's own git commands (its own cgroup, with a limit of 512 processes and threads)",
			intp: func(w *Worker) *int { return &w.Activities.Git.MemoryMB }},
		{flag: "encryption-key-file", env: EnvEncryptionKeyFile, usage: "file of '<key id> <base64 32 bytes>' lines: encrypt payloads (first key), decrypt (all)",
			strp: func(w *Worker) *string { return &w.Connection.EncryptionKeyFile }},
		{flag: "versioning", env: "RALPH_VERSIONING", usage: "on: Worker Deployment Versioning (how runs move between builds: RALPH_VERSIONING_BEHAVIOR); off: unversioned workers (servers without it)",
			custom: enum(func(w *Worker) *string { return &w.Versioning.Mode }, VersioningOn, VersioningOff),
			def:    func(w *Worker) string { return w.Versioning.Mode }},
		{flag: "deployment-name", env: "RALPH_DEPLOYMENT_NAME", usage: "Worker Deployment name; the worker's version is <deployment name>.<build id> (unset: TEMPORAL_DEPLOYMENT_NAME when Temporal's Worker Controller sets it)",
			strp: func(w *Worker) *string { return &w.Versioning.DeploymentName }},
		{flag: "build-id", env: "RALPH_BUILD_ID", usage: "build id of the worker's version (default: TEMPORAL_WORKER_BUILD_ID when Temporal's Worker Controller sets it, else the binary's VCS revision, -dirty when modified; else the first 12 hex digits of the SHA-256 of the executable)",
			strp: func(w *Worker) *string { return &w.Versioning.BuildID }},
		{flag: "set-current", env: "RALPH_SET_CURRENT", usage: "if-none: make this version current when the deployment has none; always; never (the worker logs the command that would)",
			custom: enum(func(w *Worker) *string { return &w.Versioning.SetCurrent }, SetCurrentIfNone, SetCurrentAlways, SetCurrentNever),
			def:    func(w *Worker) string { return w.Versioning.SetCurrent }},
		{flag: "versioning-behavior", env: "RALPH_VERSIONING_BEHAVIOR", usage: "auto-upgrade: runs move to the deployment's current build at their next workflow task; pinned: runs stay on their build and continue as new onto a changed target version at a round boundary or during a pause or wait",
			custom: enum(func(w *Worker) *string { return &w.Versioning.Behavior }, BehaviorAutoUpgrade, BehaviorPinned),
			def:    func(w *Worker) string { return w.Versioning.Behavior }},
		{flag: "metrics-address", env: "RALPH_METRICS_ADDRESS", usage: "host:port serving Prometheus /metrics (empty: off)",
			strp: func(w *Worker) *string { return &w.MetricsAddress }},
		{flag: "health-address", env: "RALPH_HEALTH_ADDRESS", usage: "host:port serving /healthz (alive) and /readyz (polling with a working sandbox, Temporal frontend reachable) for Kubernetes probes (empty: off)",
			strp: func(w *Worker) *string { return &w.HealthAddress }},
		{flag: "concurrent-rounds", env: "RALPH_CONCURRENT_ROUNDS", usage: "rounds one worker runs at once",
			intp: func(w *Worker) *int { return &w.ConcurrentRounds }},
		{flag: "stop-timeout-seconds", env: "RALPH_WORKER_STOP_TIMEOUT_SECONDS", usage: "graceful drain on SIGINT/SIGTERM before running rounds are cancelled",
			secp: func(w *Worker) *time.Duration { return &w.StopTimeout }},
		{flag: "connect-timeout-seconds", env: "RALPH_CONNECT_TIMEOUT_SECONDS", usage: "how long to retry an unreachable Temporal server at start",
			secp: func(w *Worker) *time.Duration { return &w.ConnectTimeout }},
		{flag: "workspace-root", env: "RALPH_WORKSPACE_ROOT", usage: "directory holding every workspace",
			strp: func(w *Worker) *string { return &w.Activities.WorkspaceRoot }},
		{flag: "session-dir", env: "RALPH_SESSION_DIR", usage: "transcripts, workspace locks and the worker's git object cache (git-cache/), outside every workspace",
			strp: func(w *Worker) *string { return &w.Activities.SessionDir }},
		{flag: "task-queue", env: "RALPH_TASK_QUEUE", usage: "task queue to poll",
			strp: func(w *Worker) *string { return &w.TaskQueue }},
		{flag: "model", env: EnvModel, usage: "model name (required unless --demo)",
			strp: func(w *Worker) *string { return &w.Activities.Agent.Model }},
		{flag: "base-url", env: EnvBaseURL, usage: "OpenAI-compatible endpoint",
			strp: func(w *Worker) *string { return &w.Activities.Agent.BaseURL }},
		// The API key has no flag: a flag would show it in ps and shell history.
		{env: EnvAPIKey, usage: "model API key (env only; never logged)", secret: true,
			strp: func(w *Worker) *string { return &w.Activities.Agent.APIKey }},
		{flag: "demo", env: EnvDemo, usage: "run against the scripted local model server (no key needed)",
			boolp: func(w *Worker) *bool { return &w.Demo }},
		{flag: "address", env: "", usage: "Temporal frontend host:port (overrides TEMPORAL_ADDRESS)",
			strp: func(w *Worker) *string { return &w.Connection.Address }},
		{flag: "namespace", env: "", usage: "Temporal namespace (overrides TEMPORAL_NAMESPACE)",
			strp: func(w *Worker) *string { return &w.Connection.Namespace }},
		{flag: "log-level", env: "RALPH_LOG_LEVEL", usage: "debug, info, warn or error",
			custom: func(w *Worker, source, value string) error {
				var l slog.Level
				if err := l.UnmarshalText([]byte(value)); err != nil {
					return fmt.Errorf("%s=%q: must be debug, info, warn or error", source, value)
				}
				w.LogLevel = l
				return nil
			},
			def: func(w *Worker) string { return strings.ToLower(w.LogLevel.String()) }},
		{flag: "log-format", env: "RALPH_LOG_FORMAT", usage: "text or json",
			custom: func(w *Worker, source, value string) error {
				switch value {
				case "text", "json":
					w.LogFormat = value
					return nil
				}
				return fmt.Errorf("%s=%q: must be text or json", source, value)
			},
			def: func(w *Worker) string { return w.LogFormat }},
	}
}

// defaultText renders a setting's default for the usage text.
func (s setting) defaultText(w *Worker) string {
	switch {
	case s.secret:
		return ""
	case s.def != nil:
		return s.def(w)
	case s.intp != nil && s.optional && *s.intp(w) == 0:
		return "(none)"
	case s.intp != nil:
		return strconv.Itoa(*s.intp(w))
	case s.listp != nil:
		return strings.Join(*s.listp(w), ":")
	case s.secp != nil:
		return strconv.Itoa(int(*s.secp(w) / time.Second))
	case s.strp != nil:
		return *s.strp(w)
	case s.boolp != nil:
		return strconv.FormatBool(*s.boolp(w))
	}
	return ""
}

// apply parses value into w; source names the flag or env var for errors.
func (s setting) apply(w *Worker, source, value string) error {
	switch {
	case s.custom != nil:
		return s.custom(w, source, strings.TrimSpace(value))
	case s.intp != nil:
		n, err := ParsePositiveInt(source, value)
		if err != nil {
			return err
		}
		if s.ceiling > 0 && n > s.ceiling {
			return fmt.Errorf("%s is %d, above its ceiling of %d (the bound that keeps a run's history payloads small)", source, n, s.ceiling)
		}
		*s.intp(w) = n
	case s.secp != nil:
		n, err := ParsePositiveInt(source, value)
		if err != nil {
			return err
		}
		*s.secp(w) = time.Duration(n) * time.Second
	case s.strp != nil:
		*s.strp(w) = strings.TrimSpace(value)
	case s.listp != nil:
		*s.listp(w) = splitList(value, ":,")
	case s.boolp != nil:
		b, err := ParseBool(source, value)
		if err != nil {
			return err
		}
		*s.boolp(w) = b
	}
	return nil
}

// splitList splits value at any of the separators seps, trimming each item
// and dropping empty ones ([] when none is left).
func splitList(value, seps string) []string {
	items := strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune(seps, r) })
	out := make([]string, 0, len(items))
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// sandboxNetwork parses RALPH_SANDBOX_NETWORK; the old boolean values are
// read as what they meant (true: the host's network; false: none), with a
// warning naming the new values.
func sandboxNetwork(w *Worker, source, value string) error {
	var mode string
	switch strings.ToLower(value) {
	case sandbox.NetProxy, sandbox.NetOff, sandbox.NetHost:
		mode = strings.ToLower(value)
	case "true", "1":
		mode = sandbox.NetHost
	case "false", "0":
		mode = sandbox.NetOff
	default:
		return fmt.Errorf("%s=%q: must be one of %s, %s, %s", source, value, sandbox.NetProxy, sandbox.NetOff, sandbox.NetHost)
	}
	if mode != strings.ToLower(value) {
		w.Warnings = append(w.Warnings, fmt.Sprintf("%s=%s is read as %q; the values are now %s (the default: only through the worker's filtering proxy), %s and %s",
			source, value, mode, sandbox.NetProxy, sandbox.NetOff, sandbox.NetHost))
	}
	w.Activities.Sandbox.Network = mode
	return nil
}

// enum is a custom parser accepting one of values into *dst(w).
func enum(dst func(*Worker) *string, values ...string) func(*Worker, string, string) error {
	return func(w *Worker, source, value string) error {
		for _, v := range values {
			if value == v {
				*dst(w) = v
				return nil
			}
		}
		return fmt.Errorf("%s=%q: must be one of %s", source, value, strings.Join(values, ", "))
	}
}

// flagValue is a string flag that remembers it was set; boolean settings
// report IsBoolFlag so `--demo` works without a value.
type flagValue struct {
	value  string
	isBool bool
}

func (f *flagValue) String() string     { return f.value }
func (f *flagValue) Set(v string) error { f.value = v; return nil }
func (f *flagValue) IsBoolFlag() bool   { return f.isBool }

// ErrHelp is returned when -h/--help was asked for; the usage was written.
var ErrHelp = flag.ErrHelp

// LoadWorker builds the worker configuration from env and args (flags win
// over env, env over defaults), makes directories absolute and validates it.
// Usage and flag errors are written to usage. The model name is not required
// here: call CheckModel once demo mode had its chance to fill it in.
func LoadWorker(args []string, env Env, usage io.Writer) (Worker, error) {
	w := DefaultWorker()
	w.Versioning.fromWorkerController(env)
	settings := workerSettings()
	defaults := DefaultWorker()

	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(usage)
	values := make(map[string]*flagValue)
	for _, s := range settings {
		if s.flag == "" {
			continue
		}
		v := &flagValue{isBool: s.boolp != nil}
		values[s.flag] = v
		fs.Var(v, s.flag, s.usage)
	}
	fs.Usage = func() { writeWorkerUsage(usage, settings, &defaults) }
	if err := fs.Parse(args); err != nil {
		return Worker{}, err
	}
	if fs.NArg() > 0 {
		return Worker{}, fmt.Errorf("unexpected argument %q (the worker takes only flags; see --help)", fs.Arg(0))
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	for _, s := range settings {
		var source, value string
		switch {
		case s.flag != "" && set[s.flag]:
			source, value = "--"+s.flag, values[s.flag].value
		case s.env != "":
			v, ok := lookup(env, s.env)
			if !ok {
				continue
			}
			source, value = s.env, v
		default:
			continue
		}
		if err := s.apply(&w, source, value); err != nil {
			return Worker{}, err
		}
	}
	tr, err := LoadTracing(env, DefaultWorkerService)
	if err != nil {
		return Worker{}, err
	}
	w.Tracing = tr
	w.readMirrors(env)
	if err := w.finish(); err != nil {
		return Worker{}, err
	}
	return w, nil
}

// readMirrors takes the package registries the worker's environment names
// (GOPROXY, npm_config_registry, PIP_INDEX_URL and the like): the sandbox's
// proxy lets commands reach them at private and special-purpose addresses
// too, and commands get the variables. A value that names no usable
// registry, or holds a credential and so is not passed, is a warning
// naming the variable, not an error: these variables configure
// toolchains, not the worker.
func (w *Worker) readMirrors(env Env) {
	if env == nil {
		env = OSEnv
	}
	mirrors, problems := netproxy.Mirrors(env.Environ())
	w.Activities.Sandbox.Mirrors = mirrors
	w.Warnings = append(w.Warnings, problems...)
	for _, name := range sandbox.WithheldRegistryEnv(env.Environ(), w.Activities.Sandbox.CommandEnv) {
		w.Warnings = append(w.Warnings, name+" holds a credential (a user or password in a URL, or a token in its query): "+
			"not passed to commands, whose model could read it; they use their toolchain's default registry "+
			"(list "+name+" in RALPH_COMMAND_ENV to pass it anyway)")
	}
}

// finish validates cross-setting rules and resolves derived values.
func (w *Worker) finish() error {
	if w.TaskQueue == "" {
		return errors.New("RALPH_TASK_QUEUE / --task-queue: must not be empty")
	}
	if err := w.Tracing.CheckEncryption(w.Connection.EncryptionKeyFile); err != nil {
		return err
	}
	if err := w.Activities.Agents.Validate(); err != nil {
		return err
	}
	lim := w.Activities.Limits
	if lim.HeartbeatTimeoutSeconds >= lim.RoundTimeoutSeconds {
		return fmt.Errorf("RALPH_HEARTBEAT_TIMEOUT_SECONDS=%d must be less than RALPH_ROUND_TIMEOUT_SECONDS=%d",
			lim.HeartbeatTimeoutSeconds, lim.RoundTimeoutSeconds)
	}
	if w.Activities.Agent.BaseURL != "" {
		u, err := url.Parse(w.Activities.Agent.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s=%q: must be an http(s) URL like https://api.openai.com/v1", EnvBaseURL, w.Activities.Agent.BaseURL)
		}
	}
	for _, d := range []struct {
		name string
		path *string
	}{
		{"RALPH_WORKSPACE_ROOT", &w.Activities.WorkspaceRoot},
		{"RALPH_SESSION_DIR", &w.Activities.SessionDir},
	} {
		if *d.path == "" {
			return fmt.Errorf("%s: must not be empty", d.name)
		}
		abs, err := filepath.Abs(*d.path)
		if err != nil {
			return fmt.Errorf("%s=%q: %v", d.name, *d.path, err)
		}
		*d.path = abs
	}
	root, sessions := w.Activities.WorkspaceRoot, w.Activities.SessionDir
	if activities.Within(sessions, root) {
		return fmt.Errorf("RALPH_SESSION_DIR=%q is inside RALPH_WORKSPACE_ROOT=%q: transcripts must live outside every workspace", sessions, root)
	}
	if activities.Within(root, sessions) {
		return fmt.Errorf("RALPH_WORKSPACE_ROOT=%q is inside RALPH_SESSION_DIR=%q: keep transcripts and workspaces apart", root, sessions)
	}
	if t := w.Activities.Agent.ToolLimits; t.MaxCommandTimeout < t.CommandTimeout {
		return fmt.Errorf("RALPH_MAX_COMMAND_TIMEOUT_SECONDS=%d must not be less than RALPH_COMMAND_TIMEOUT_SECONDS=%d",
			int(t.MaxCommandTimeout/time.Second), int(t.CommandTimeout/time.Second))
	}
	if lim.MaxCandidates > MaxCandidatesCeiling {
		return fmt.Errorf("RALPH_MAX_CANDIDATES=%d is over %d: every round lists its candidates in the status query", lim.MaxCandidates, MaxCandidatesCeiling)
	}
	if lim.Candidates > lim.MaxCandidates {
		return fmt.Errorf("RALPH_CANDIDATES=%d is over RALPH_MAX_CANDIDATES=%d", lim.Candidates, lim.MaxCandidates)
	}
	if lim.MaxCampaignParallel > MaxCampaignParallelCeiling {
		return fmt.Errorf("RALPH_MAX_CAMPAIGN_PARALLEL=%d is over %d: a campaign keeps every running loop as a pending child, and Temporal allows 2,000", lim.MaxCampaignParallel, MaxCampaignParallelCeiling)
	}
	if lim.MaxCampaignTasks > MaxCampaignTasksCeiling {
		return fmt.Errorf("RALPH_MAX_CAMPAIGN_TASKS=%d is over %d: a campaign carries every task's state across continue-as-new within 1 MiB", lim.MaxCampaignTasks, MaxCampaignTasksCeiling)
	}
	if lim.MaxMergeLanes > MaxMergeLanesCeiling {
		return fmt.Errorf("RALPH_MAX_MERGE_LANES=%d is over %d: each lane is a verify in flight and a line of the status", lim.MaxMergeLanes, MaxMergeLanesCeiling)
	}
	if lim.MaxWaveTasks > MaxWaveTasksCeiling {
		return fmt.Errorf("RALPH_MAX_WAVE_TASKS=%d is over %d: a wave's plan is one activity result, kept in the campaign's state", lim.MaxWaveTasks, MaxWaveTasksCeiling)
	}
	if lim.Candidates > 1 && !w.Activities.Git.Enabled() {
		return fmt.Errorf("RALPH_CANDIDATES=%d needs RALPH_GIT=local or remote: each candidate works a clone of the workspace", lim.Candidates)
	}
	w.Activities.HeartbeatInterval = HeartbeatInterval(lim.HeartbeatTimeoutSeconds)
	// Recorded with the limits, so a replay never depends on this worker's setting.
	w.Activities.Limits.UpgradeOnTargetChange = w.Versioning.Mode == VersioningOn && w.Versioning.Behavior == BehaviorPinned
	return w.Versioning.check()
}

// Ceilings of the campaign settings (docs/campaigns.md, "Capacity"): a
// campaign's loops are pending children (Temporal allows 2,000), and the
// per-task state it carries is measured under 1 MiB at 5,000 tasks.
const (
	MaxCampaignParallelCeiling = 1000
	MaxCampaignTasksCeiling    = 5000
	MaxMergeLanesCeiling       = 16
	MaxWaveTasksCeiling        = 1000
)

// MaxCandidatesCeiling bounds RALPH_MAX_CANDIDATES, and so the status
// query's answer (each of its rounds lists its candidates).
const MaxCandidatesCeiling = 16

// candidateAgents reads RALPH_CANDIDATE_AGENTS: providers the worker knows,
// checked at start like RALPH_AGENT.
func candidateAgents(w *Worker, source, value string) error {
	agents := splitList(value, ",")
	for _, a := range agents {
		if !slices.Contains(cli.Kinds(), a) {
			return fmt.Errorf("%s=%q: %q is not a provider (one of %s)", source, value, a, strings.Join(cli.Kinds(), ", "))
		}
	}
	w.Activities.Limits.CandidateAgents, w.Activities.Agents.Candidates = agents, agents
	return nil
}

// candidateScore reads RALPH_CANDIDATE_SCORE; none is recorded as "".
func candidateScore(w *Worker, source, value string) error {
	switch value {
	case activities.CandidateScoreNone:
		w.Activities.Limits.CandidateScore = ""
	case activities.CandidateScoreVerify:
		w.Activities.Limits.CandidateScore = value
	default:
		return fmt.Errorf("%s=%q: must be none or verify", source, value)
	}
	return nil
}

// Temporal refuses '.' and ':' in a deployment name (they delimit version
// strings); build ids keep to the characters of revisions and hashes.
var (
	deploymentNamePattern = regexp.MustCompile(`^[A-Za-z0-9_/-]{1,200}$`)
	buildIDPattern        = regexp.MustCompile(`^[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,199}$`)
)

func (v Versioning) check() error {
	if !deploymentNamePattern.MatchString(v.DeploymentName) {
		return fmt.Errorf("RALPH_DEPLOYMENT_NAME=%q: must be 1-200 letters, digits, '-', '_' or '/' (Temporal refuses '.' and ':' in a deployment name)", v.DeploymentName)
	}
	if v.BuildID != "" && !buildIDPattern.MatchString(v.BuildID) {
		return fmt.Errorf("RALPH_BUILD_ID=%q: must be 1-200 letters, digits, '.', '-', '_' or '+', not starting with '.'", v.BuildID)
	}
	return nil
}

// CheckBuildID validates a derived build id like a configured one.
func CheckBuildID(id string) error {
	return Versioning{DeploymentName: DefaultDeploymentName, BuildID: id}.check()
}

// HeartbeatInterval is how often a round heartbeats for a heartbeat timeout:
// a fifth of it, at most one second, so a cancel reaches a round quickly and
// a slow heartbeat never times out.
func HeartbeatInterval(timeoutSeconds int) time.Duration {
	d := time.Duration(timeoutSeconds) * time.Second / 5
	if d > time.Second || d <= 0 {
		d = time.Second
	}
	return d
}

// CheckModel fails when no model name is configured: real runs need one.
func (w Worker) CheckModel() error {
	if strings.TrimSpace(w.Activities.Agent.Model) == "" {
		return fmt.Errorf("%s is not set: a real run needs a model name (set %s or --model, plus %s and %s for the endpoint), or start the worker with --demo (%s=1) to use the scripted local model",
			EnvModel, EnvModel, EnvBaseURL, EnvAPIKey, EnvDemo)
	}
	return nil
}

// LogAttrs describe the configuration for the start-up log line. The API key
// is never included, only whether one is set.
func (w Worker) LogAttrs() []any {
	a := w.Activities
	return []any{
		slog.String("taskQueue", w.TaskQueue),
		slog.Int("concurrentRounds", w.ConcurrentRounds),
		slog.String("workspaceRoot", a.WorkspaceRoot),
		slog.String("sessionDir", a.SessionDir),
		slog.String("model", a.Agent.Model),
		slog.String("baseURL", agent.SafeURL(a.Agent.BaseURL)),
		slog.Bool("apiKeySet", a.Agent.APIKey != ""),
		slog.Bool("demo", w.Demo),
		slog.Any("limits", a.Limits),
		slog.Int("maxModelCalls", a.Agent.MaxModelCalls),
		slog.Duration("modelCallTimeout", a.Agent.CallTimeout),
		slog.Int("modelRetries", a.Agent.TransientRetries),
		slog.Duration("commandTimeout", a.Agent.ToolLimits.CommandTimeout),
		slog.Duration("maxCommandTimeout", a.Agent.ToolLimits.MaxCommandTimeout),
		slog.Int("commandOutputChars", a.Agent.ToolLimits.OutputCap),
		slog.Duration("heartbeatInterval", a.HeartbeatInterval),
		slog.Duration("stopTimeout", w.StopTimeout),
		slog.String("git", a.Git.Mode),
		slog.String("reviewModel", a.ReviewModel),
		slog.String("planModel", a.PlanModel),
		slog.String("gitRemote", gitws.RedactURL(a.Git.Remote)),
	}
}

func writeWorkerUsage(out io.Writer, settings []setting, defaults *Worker) {
	fmt.Fprint(out, `Usage: worker [flags]

Runs a Ralph worker: registers the Ralph workflow and its activities on a task
queue and serves until SIGINT/SIGTERM, then drains. It connects with the
standard Temporal client environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE / TEMPORAL_CONFIG_FILE).
Every flag mirrors an environment variable and wins over it; every number is a
positive integer.

`)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  flag\tenv\tdefault\tmeaning")
	for _, s := range settings {
		name := "(env only)"
		if s.flag != "" {
			name = "--" + s.flag
		}
		env := s.env
		if env == "" {
			env = "-"
		}
		def := s.defaultText(defaults)
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, env, def, s.usage)
	}
	tw.Flush()
}

// extraBody parses RALPH_EXTRA_BODY: a JSON object, whose fields go into
// every model request.
func extraBody(w *Worker, source, value string) error {
	if value == "" {
		w.Activities.Agent.ExtraBody = nil
		return nil
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(value), &body); err != nil || body == nil {
		return fmt.Errorf("%s: must be a JSON object, such as {\"enable_thinking\": false}: %q", source, value)
	}
	w.Activities.Agent.ExtraBody = body
	return nil
}

func extraBodyText(body map[string]any) string {
	if len(body) == 0 {
		return ""
	}
	data, _ := json.Marshal(body)
	return string(data)
}

// notifyEvents are the events RALPH_NOTIFY_EVENTS may name.
var notifyEvents = []string{"complete", "blocked", "failed", "budget-limited", "stopped", "cancelled",
	workflows.EventWaiting, workflows.EventAwaitingApproval, campaign.TaskMerged, campaign.TaskReturned, campaign.EventPaused}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
