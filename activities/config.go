package activities

import "time"

// Config is everything a worker's activities need; the worker builds it from
// env and flags (internal/config) and validates it before starting.
type Config struct {
	// Limits are returned by ResolveLimits and so recorded in each run's history.
	Limits Limits
	// WorkspaceRoot holds every workspace: <root>/<RoundInput.Workspace>.
	WorkspaceRoot string
	// SessionDir holds transcripts and workspace locks, outside every workspace.
	SessionDir string
	Model      ModelConfig
	Agent      AgentConfig
	// HeartbeatInterval is how often a running round heartbeats; keep it well
	// under Limits.HeartbeatTimeoutSeconds.
	HeartbeatInterval time.Duration
}

// ModelConfig is the OpenAI-compatible endpoint every round talks to.
type ModelConfig struct {
	BaseURL string
	// APIKey is never written anywhere: not in transcripts, logs, history or errors.
	APIKey string
	Model  string
	// CallTimeout bounds one model call.
	CallTimeout time.Duration
	// TransientRetries bounds the in-activity retries of one model call
	// (429, 408, 409, 5xx, non-JSON error pages, network errors).
	TransientRetries int
	// MaxRetryAfter caps how long a Retry-After header is honoured.
	MaxRetryAfter time.Duration
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff between
	// transient retries when the provider sends no Retry-After (jittered,
	// doubling from the base, capped at the max). Zero means the agent's
	// defaults (1 s and 30 s).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
}

// AgentConfig bounds one fresh session.
type AgentConfig struct {
	MaxModelCalls  int
	MaxRepairs     int
	MaxReminders   int
	CommandTimeout time.Duration
	// MaxCommandTimeout caps the timeout_seconds a model may ask of
	// run_command; zero means CommandTimeout is both default and cap.
	MaxCommandTimeout time.Duration
	CommandOutputCap  int
}

// DefaultConfig is the SPEC defaults with relative directories.
func DefaultConfig() Config {
	return Config{
		Limits:        DefaultLimits(),
		WorkspaceRoot: ".ralph/workspaces",
		SessionDir:    ".ralph/sessions",
		Model: ModelConfig{
			CallTimeout:      5 * time.Minute,
			TransientRetries: 5,
			MaxRetryAfter:    60 * time.Second,
			RetryBaseDelay:   time.Second,
			RetryMaxDelay:    30 * time.Second,
		},
		Agent: AgentConfig{
			MaxModelCalls:    100,
			MaxRepairs:       3,
			MaxReminders:     2,
			CommandTimeout:   2 * time.Minute,
			CommandOutputCap: 30000,
		},
		HeartbeatInterval: time.Second,
	}
}
