package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/workflows"
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
	// Connection overrides the standard TEMPORAL_* variables when set.
	Connection Connection
	// LogLevel and LogFormat ("text" or "json") configure the slog handler.
	LogLevel  slog.Level
	LogFormat string
}

// Connection holds command-line overrides of the standard Temporal client
// variables; empty fields leave TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (and
// the envconfig file profile) in charge.
type Connection struct {
	Address   string
	Namespace string
}

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

// Environment variables of the model endpoint (SPEC section 3).
const (
	EnvModel   = "RALPH_MODEL"
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvDemo    = "RALPH_DEMO"
)

// DefaultWorker is the configuration with every default and relative
// directories (LoadWorker makes them absolute).
func DefaultWorker() Worker {
	a := activities.DefaultConfig()
	a.Model.BaseURL = DefaultModelBaseURL
	return Worker{
		Activities:       a,
		TaskQueue:        DefaultTaskQueue,
		ConcurrentRounds: DefaultConcurrentRounds,
		MaxResultChars:   DefaultMaxResultChars,
		StopTimeout:      DefaultStopTimeout,
		ConnectTimeout:   DefaultConnectTimeout,
		LogLevel:         slog.LevelInfo,
		LogFormat:        "text",
	}
}

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
		{flag: "max-handoff-chars", env: "RALPH_MAX_HANDOFF_CHARS", usage: "max compact-JSON code points of one handoff report",
			intp: func(w *Worker) *int { return &lim(w).MaxHandoffChars }},
		{flag: "max-result-chars", env: "RALPH_MAX_RESULT_CHARS", usage: "max code points of a human-facing result text",
			intp: func(w *Worker) *int { return &w.MaxResultChars }},
		{flag: "max-objective-chars", env: "RALPH_MAX_OBJECTIVE_CHARS", usage: "max code points of an objective",
			intp: func(w *Worker) *int { return &lim(w).MaxObjectiveChars }},
		{flag: "rounds-per-run", env: "RALPH_ROUNDS_PER_RUN", usage: "rounds per workflow run before continue-as-new",
			intp: func(w *Worker) *int { return &lim(w).RoundsPerRun }},
		{flag: "round-timeout-seconds", env: "RALPH_ROUND_TIMEOUT_SECONDS", usage: "bound of one attempt of one round",
			intp: func(w *Worker) *int { return &lim(w).RoundTimeoutSeconds }},
		{flag: "heartbeat-timeout-seconds", env: "RALPH_HEARTBEAT_TIMEOUT_SECONDS", usage: "silence after which a round counts as lost (also bounds cancel latency)",
			intp: func(w *Worker) *int { return &lim(w).HeartbeatTimeoutSeconds }},
		{flag: "round-attempts", env: "RALPH_ROUND_ATTEMPTS", usage: "attempts of one round after infrastructure failures",
			intp: func(w *Worker) *int { return &lim(w).RoundAttempts }},
		{flag: "max-model-calls", env: "RALPH_MAX_MODEL_CALLS", usage: "model calls allowed in one round",
			intp: func(w *Worker) *int { return &w.Activities.Agent.MaxModelCalls }},
		{flag: "model-call-timeout-seconds", env: "RALPH_MODEL_CALL_TIMEOUT_SECONDS", usage: "bound of one model call",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Model.CallTimeout }},
		{flag: "model-retries", env: "RALPH_MODEL_RETRIES", usage: "in-round retries of a transient model error",
			intp: func(w *Worker) *int { return &w.Activities.Model.TransientRetries }},
		{flag: "max-retry-after-seconds", env: "RALPH_MAX_RETRY_AFTER_SECONDS", usage: "cap on an honoured Retry-After",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Model.MaxRetryAfter }},
		{flag: "command-timeout-seconds", env: "RALPH_COMMAND_TIMEOUT_SECONDS", usage: "default timeout of one run_command",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.CommandTimeout }},
		{flag: "max-command-timeout-seconds", env: "RALPH_MAX_COMMAND_TIMEOUT_SECONDS", usage: "largest timeout_seconds a model may ask of run_command",
			secp: func(w *Worker) *time.Duration { return &w.Activities.Agent.MaxCommandTimeout },
			def:  func(*Worker) string { return "= command timeout" }},
		{flag: "command-output-chars", env: "RALPH_COMMAND_OUTPUT_CHARS", usage: "run_command output cap (head and tail kept)",
			intp: func(w *Worker) *int { return &w.Activities.Agent.CommandOutputCap }},
		{flag: "concurrent-rounds", env: "RALPH_CONCURRENT_ROUNDS", usage: "rounds one worker runs at once",
			intp: func(w *Worker) *int { return &w.ConcurrentRounds }},
		{flag: "stop-timeout-seconds", env: "RALPH_WORKER_STOP_TIMEOUT_SECONDS", usage: "graceful drain on SIGINT/SIGTERM before running rounds are cancelled",
			secp: func(w *Worker) *time.Duration { return &w.StopTimeout }},
		{flag: "connect-timeout-seconds", env: "RALPH_CONNECT_TIMEOUT_SECONDS", usage: "how long to retry an unreachable Temporal server at start",
			secp: func(w *Worker) *time.Duration { return &w.ConnectTimeout }},
		{flag: "workspace-root", env: "RALPH_WORKSPACE_ROOT", usage: "directory holding every workspace",
			strp: func(w *Worker) *string { return &w.Activities.WorkspaceRoot }},
		{flag: "session-dir", env: "RALPH_SESSION_DIR", usage: "transcripts and workspace locks, outside every workspace",
			strp: func(w *Worker) *string { return &w.Activities.SessionDir }},
		{flag: "task-queue", env: "RALPH_TASK_QUEUE", usage: "task queue to poll",
			strp: func(w *Worker) *string { return &w.TaskQueue }},
		{flag: "model", env: EnvModel, usage: "model name (required unless --demo)",
			strp: func(w *Worker) *string { return &w.Activities.Model.Model }},
		{flag: "base-url", env: EnvBaseURL, usage: "OpenAI-compatible endpoint",
			strp: func(w *Worker) *string { return &w.Activities.Model.BaseURL }},
		// The API key has no flag: a flag would show it in ps and shell history.
		{env: EnvAPIKey, usage: "model API key (env only; never logged)", secret: true,
			strp: func(w *Worker) *string { return &w.Activities.Model.APIKey }},
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
	case s.intp != nil:
		return strconv.Itoa(*s.intp(w))
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
		*s.intp(w) = n
	case s.secp != nil:
		n, err := ParsePositiveInt(source, value)
		if err != nil {
			return err
		}
		*s.secp(w) = time.Duration(n) * time.Second
	case s.strp != nil:
		*s.strp(w) = strings.TrimSpace(value)
	case s.boolp != nil:
		b, err := ParseBool(source, value)
		if err != nil {
			return err
		}
		*s.boolp(w) = b
	}
	return nil
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
	if err := w.finish(); err != nil {
		return Worker{}, err
	}
	return w, nil
}

// finish validates cross-setting rules and resolves derived values.
func (w *Worker) finish() error {
	if w.TaskQueue == "" {
		return errors.New("RALPH_TASK_QUEUE / --task-queue: must not be empty")
	}
	lim := w.Activities.Limits
	if lim.HeartbeatTimeoutSeconds >= lim.RoundTimeoutSeconds {
		return fmt.Errorf("RALPH_HEARTBEAT_TIMEOUT_SECONDS=%d must be less than RALPH_ROUND_TIMEOUT_SECONDS=%d",
			lim.HeartbeatTimeoutSeconds, lim.RoundTimeoutSeconds)
	}
	if w.Activities.Model.BaseURL != "" {
		u, err := url.Parse(w.Activities.Model.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s=%q: must be an http(s) URL like https://api.openai.com/v1", EnvBaseURL, w.Activities.Model.BaseURL)
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
	if within(sessions, root) {
		return fmt.Errorf("RALPH_SESSION_DIR=%q is inside RALPH_WORKSPACE_ROOT=%q: transcripts must live outside every workspace", sessions, root)
	}
	if within(root, sessions) {
		return fmt.Errorf("RALPH_WORKSPACE_ROOT=%q is inside RALPH_SESSION_DIR=%q: keep transcripts and workspaces apart", root, sessions)
	}
	if a := &w.Activities.Agent; a.MaxCommandTimeout != 0 && a.MaxCommandTimeout < a.CommandTimeout {
		return fmt.Errorf("RALPH_MAX_COMMAND_TIMEOUT_SECONDS=%d must not be less than RALPH_COMMAND_TIMEOUT_SECONDS=%d",
			int(a.MaxCommandTimeout/time.Second), int(a.CommandTimeout/time.Second))
	}
	w.Activities.HeartbeatInterval = HeartbeatInterval(lim.HeartbeatTimeoutSeconds)
	return nil
}

// within reports whether path is dir or lies under it (both absolute, clean).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
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
	if strings.TrimSpace(w.Activities.Model.Model) == "" {
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
		slog.String("model", a.Model.Model),
		slog.String("baseURL", a.Model.BaseURL),
		slog.Bool("apiKeySet", a.Model.APIKey != ""),
		slog.Bool("demo", w.Demo),
		slog.Any("limits", a.Limits),
		slog.Int("maxModelCalls", a.Agent.MaxModelCalls),
		slog.Duration("modelCallTimeout", a.Model.CallTimeout),
		slog.Int("modelRetries", a.Model.TransientRetries),
		slog.Duration("commandTimeout", a.Agent.CommandTimeout),
		slog.Duration("maxCommandTimeout", max(a.Agent.MaxCommandTimeout, a.Agent.CommandTimeout)),
		slog.Int("commandOutputChars", a.Agent.CommandOutputCap),
		slog.Duration("heartbeatInterval", a.HeartbeatInterval),
		slog.Duration("stopTimeout", w.StopTimeout),
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
