package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/agent/cli"
)

func TestLoadWorkerDefaults(t *testing.T) {
	w, err := LoadWorker(nil, MapEnv{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := activities.DefaultLimits()
	if !reflect.DeepEqual(w.Activities.Limits, want) {
		t.Errorf("limits = %+v, want %+v", w.Activities.Limits, want)
	}
	if w.Activities.Limits.MaxRounds != 256 || w.Activities.Limits.MaxHandoffChars != 16384 || w.Activities.Limits.MaxObjectiveChars != 32768 {
		t.Errorf("documented defaults changed (docs/reference.md#settings-worker-flags-mirror-env): %+v", w.Activities.Limits)
	}
	if w.MaxResultChars != 16384 || w.TaskQueue != "ralph" || w.ConcurrentRounds != DefaultConcurrentRounds {
		t.Errorf("worker defaults: %+v", w)
	}
	for name, dir := range map[string]string{"workspace root": w.Activities.WorkspaceRoot, "session dir": w.Activities.SessionDir} {
		if !filepath.IsAbs(dir) {
			t.Errorf("%s %q is not absolute", name, dir)
		}
	}
	if !strings.HasSuffix(w.Activities.WorkspaceRoot, filepath.FromSlash(".ralph/workspaces")) ||
		!strings.HasSuffix(w.Activities.SessionDir, filepath.FromSlash(".ralph/sessions")) {
		t.Errorf("directories: %q, %q", w.Activities.WorkspaceRoot, w.Activities.SessionDir)
	}
	if w.Activities.Agent.BaseURL != DefaultModelBaseURL || w.Activities.Agent.Model != "" {
		t.Errorf("model: %+v", w.Activities.Agent)
	}
	if w.Activities.HeartbeatInterval != time.Second {
		t.Errorf("heartbeat interval = %v", w.Activities.HeartbeatInterval)
	}
	if a := w.Activities.Agent; !a.Stream || a.IdleTimeout != 120*time.Second || a.WireAPI != "chat" || a.ReasoningEffort != "" || a.ExtraBody != nil || a.MaxTokensFieldName != "" {
		t.Errorf("wire defaults: stream %v, idle %s, wire %q, effort %q, extra body %v, max tokens field %q",
			a.Stream, a.IdleTimeout, a.WireAPI, a.ReasoningEffort, a.ExtraBody, a.MaxTokensFieldName)
	}
	if err := w.CheckModel(); err == nil || !strings.Contains(err.Error(), "RALPH_MODEL") {
		t.Errorf("CheckModel without a model: %v", err)
	}
	if w.Demo || w.LogLevel != slog.LevelInfo || w.LogFormat != "text" {
		t.Errorf("demo/log: %+v", w)
	}
}

func TestLoadWorkerValues(t *testing.T) {
	tmp := t.TempDir()
	tests := []struct {
		name  string
		args  []string
		env   MapEnv
		check func(t *testing.T, w Worker)
	}{
		{"env numbers", nil, MapEnv{
			"RALPH_MAX_ROUNDS": "12", "RALPH_MAX_HANDOFF_CHARS": "100", "RALPH_MAX_RESULT_CHARS": "50",
			"RALPH_MAX_OBJECTIVE_CHARS": "77", "RALPH_ROUNDS_PER_RUN": "4", "RALPH_ROUND_TIMEOUT_SECONDS": "600",
			"RALPH_HEARTBEAT_TIMEOUT_SECONDS": "10", "RALPH_ROUND_ATTEMPTS": "2", "RALPH_MAX_MODEL_CALLS": "9",
			"RALPH_MODEL_CALL_TIMEOUT_SECONDS": "30", "RALPH_MODEL_RETRIES": "1", "RALPH_MAX_RETRY_AFTER_SECONDS": "7",
			"RALPH_COMMAND_TIMEOUT_SECONDS": "45", "RALPH_COMMAND_OUTPUT_CHARS": "1000", "RALPH_CONCURRENT_ROUNDS": "3",
			"RALPH_WORKER_STOP_TIMEOUT_SECONDS": "2", "RALPH_MAX_COMMAND_TIMEOUT_SECONDS": "600",
			"RALPH_MAX_RUN_TOKENS": "5000", "RALPH_MAX_RUN_MINUTES": "90", "RALPH_MAX_IDLE_ROUNDS": "2",
			"RALPH_SEARCH_ATTRIBUTES": "false", "RALPH_VERIFY_COMMAND": " go test ./... ",
			"RALPH_MAX_WAIT_MINUTES": "15", "RALPH_MAX_DEFERRALS": "4", "RALPH_MAX_PAUSE_HOURS": "48",
			"RALPH_MAX_CAMPAIGN_PARALLEL": "5", "RALPH_MAX_CAMPAIGN_TASKS": "40", "RALPH_FALLBACK_MODELS": " gpt-b, qwen2.5-coder:32b ,,",
			"RALPH_GIT": "local", "RALPH_CANDIDATES": "2", "RALPH_MAX_CANDIDATES": "3", "RALPH_CANDIDATE_AGENTS": "builtin",
			"RALPH_CANDIDATE_MODELS": "m1, m2", "RALPH_CANDIDATE_SCORE": "verify", "RALPH_MAX_WAVES": "7", "RALPH_MAX_WAVE_TASKS": "12",
		}, func(t *testing.T, w Worker) {
			want := activities.Limits{MaxRounds: 12, MaxHandoffChars: 100, MaxObjectiveChars: 77, RoundTimeoutSeconds: 600,
				HeartbeatTimeoutSeconds: 10, RoundAttempts: 2, RoundsPerRun: 4, VerifyCommand: "go test ./...",
				MaxRunTokens: 5000, MaxRunMinutes: 90, MaxIdleRounds: 2, SearchAttributes: false,
				MaxWaitMinutes: 15, MaxDeferrals: 4, MaxPauseHours: 48, MaxCampaignParallel: 5, MaxCampaignTasks: 40, MergeRetryMinutes: 30,
				MaxWaves: 7, MaxWaveTasks: 12, Candidates: 2, MaxCandidates: 3, CandidateAgents: []string{"builtin"}, CandidateModels: []string{"m1", "m2"}, CandidateScore: "verify"}
			if got := strings.Join(w.Activities.Agent.FallbackModels, "|"); got != "gpt-b|qwen2.5-coder:32b" {
				t.Errorf("fallback models = %q", got)
			}
			if !reflect.DeepEqual(w.Activities.Limits, want) {
				t.Errorf("limits = %+v, want %+v", w.Activities.Limits, want)
			}
			a := w.Activities
			if w.MaxResultChars != 50 || a.Agent.MaxModelCalls != 9 || a.Agent.CallTimeout != 30*time.Second ||
				a.Agent.TransientRetries != 1 || a.Agent.MaxRetryAfter != 7*time.Second || a.Agent.ToolLimits.CommandTimeout != 45*time.Second ||
				a.Agent.ToolLimits.OutputCap != 1000 || a.Agent.ToolLimits.MaxCommandTimeout != 600*time.Second || w.ConcurrentRounds != 3 || w.StopTimeout != 2*time.Second {
				t.Errorf("values: %+v", w)
			}
			if a.HeartbeatInterval != time.Second {
				t.Errorf("heartbeat interval = %v", a.HeartbeatInterval)
			}
		}},
		{"agent providers", nil, MapEnv{"RALPH_AGENT": "opencode", "RALPH_AGENT_COMMAND": "/opt/oc", "RALPH_AGENT_MODEL": "m2",
			"RALPH_AGENT_IDLE_SECONDS": "90", "RALPH_REVIEW_AGENT": "claude-code", "RALPH_PLAN_AGENT": "codex", "RALPH_PLAN_MODEL": "planner",
			"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "sk-ant-x", "RALPH_AGENT_MAX_INFLIGHT": "2", "RALPH_AGENT_MAX_REQUEST_MB": "8"}, func(t *testing.T, w Worker) {
			if w.Activities.PlanModel != "planner" {
				t.Errorf("plan model = %q", w.Activities.PlanModel)
			}
			want := cli.Settings{Agent: "opencode", Review: "claude-code", Plan: "codex", Command: "/opt/oc", Model: "m2", Idle: 90 * time.Second,
				AnthropicBaseURL: "http://127.0.0.1:9", AnthropicAPIKey: "sk-ant-x", MaxInflight: 2, MaxRequestMB: 8}
			if !reflect.DeepEqual(w.Activities.Agents, want) {
				t.Errorf("agents = %+v, want %+v", w.Activities.Agents, want)
			}
		}},
		{"agent providers by default", nil, MapEnv{}, func(t *testing.T, w Worker) {
			if !reflect.DeepEqual(w.Activities.Agents, cli.DefaultSettings()) {
				t.Errorf("agents = %+v", w.Activities.Agents)
			}
		}},
		{"the model wire", nil, MapEnv{"RALPH_MODEL_IDLE_SECONDS": "30", "RALPH_MODEL_STREAM": "off", "RALPH_WIRE_API": "responses",
			"RALPH_REASONING_EFFORT": "high", "RALPH_EXTRA_BODY": ` {"enable_thinking": false, "chat_template_kwargs": {"thinking": true}} `,
			"RALPH_MAX_TOKENS_FIELD": "max_completion_tokens"}, func(t *testing.T, w Worker) {
			a := w.Activities.Agent
			got := []any{a.IdleTimeout, a.Stream, a.WireAPI, a.ReasoningEffort, a.ExtraBody, a.MaxTokensFieldName}
			want := []any{30 * time.Second, false, "responses", "high",
				map[string]any{"enable_thinking": false, "chat_template_kwargs": map[string]any{"thinking": true}}, "max_completion_tokens"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("wire settings = %v, want %v", got, want)
			}
		}},
		{"flags win over env", []string{"--max-rounds", "3", "--task-queue=q2", "--concurrent-rounds=1"},
			MapEnv{"RALPH_MAX_ROUNDS": "12", "RALPH_TASK_QUEUE": "q1", "RALPH_CONCURRENT_ROUNDS": "5"},
			func(t *testing.T, w Worker) {
				if w.Activities.Limits.MaxRounds != 3 || w.TaskQueue != "q2" || w.ConcurrentRounds != 1 {
					t.Errorf("got %+v", w)
				}
			}},
		{"transcript cap", nil, MapEnv{"RALPH_TRANSCRIPT_MAX_MB": "3"},
			func(t *testing.T, w Worker) {
				if w.Activities.TranscriptMaxMB != 3 {
					t.Errorf("TranscriptMaxMB = %d, want 3", w.Activities.TranscriptMaxMB)
				}
			}},
		{"protected paths and the reviewer", []string{"--review-model", "judge"},
			MapEnv{"RALPH_PROTECTED_PATHS": " tests/**, !tests/fixtures/** ,verify.sh,", "RALPH_REVIEW": "on", "RALPH_REVIEW_DIFF_CHARS": "1000"},
			func(t *testing.T, w Worker) {
				a := w.Activities
				if !reflect.DeepEqual(a.Limits.ProtectedPaths, []string{"tests/**", "!tests/fixtures/**", "verify.sh"}) || !a.Limits.Review ||
					a.ReviewModel != "judge" || a.ReviewDiffChars != 1000 {
					t.Errorf("got %+v %+v", a.Limits, a)
				}
			}},
		{"reviewer off by default", nil, MapEnv{},
			func(t *testing.T, w Worker) {
				if w.Activities.Limits.Review || w.Activities.ReviewDiffChars != 60000 || w.Activities.Limits.ProtectedPaths != nil {
					t.Errorf("got %+v", w.Activities)
				}
			}},
		{"empty env counts as unset", nil, MapEnv{"RALPH_MAX_ROUNDS": "", "RALPH_TASK_QUEUE": ""},
			func(t *testing.T, w Worker) {
				if w.Activities.Limits.MaxRounds != 256 || w.TaskQueue != "ralph" {
					t.Errorf("got %+v", w)
				}
			}},
		{"model endpoint", []string{"--model", "gpt-x"}, MapEnv{"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-secret"},
			func(t *testing.T, w Worker) {
				m := w.Activities.Agent
				if m.Model != "gpt-x" || m.BaseURL != "http://127.0.0.1:9/v1" || m.APIKey != "sk-secret" {
					t.Errorf("model = %+v", m)
				}
				if err := w.CheckModel(); err != nil {
					t.Error(err)
				}
			}},
		{"directories resolved", []string{"--workspace-root", filepath.Join(tmp, "ws")}, MapEnv{"RALPH_SESSION_DIR": "rel/sessions"},
			func(t *testing.T, w Worker) {
				if w.Activities.WorkspaceRoot != filepath.Join(tmp, "ws") {
					t.Errorf("root = %q", w.Activities.WorkspaceRoot)
				}
				if !filepath.IsAbs(w.Activities.SessionDir) || !strings.HasSuffix(w.Activities.SessionDir, filepath.FromSlash("rel/sessions")) {
					t.Errorf("sessions = %q", w.Activities.SessionDir)
				}
			}},
		{"demo flag", []string{"--demo"}, MapEnv{}, func(t *testing.T, w Worker) {
			if !w.Demo {
				t.Error("demo not set")
			}
		}},
		{"demo env", nil, MapEnv{"RALPH_DEMO": "1"}, func(t *testing.T, w Worker) {
			if !w.Demo {
				t.Error("demo not set")
			}
		}},
		{"demo flag false wins", []string{"--demo=false"}, MapEnv{"RALPH_DEMO": "true"}, func(t *testing.T, w Worker) {
			if w.Demo {
				t.Error("demo set")
			}
		}},
		{"short heartbeat timeout", nil, MapEnv{"RALPH_HEARTBEAT_TIMEOUT_SECONDS": "1"}, func(t *testing.T, w Worker) {
			if w.Activities.HeartbeatInterval != 200*time.Millisecond {
				t.Errorf("heartbeat interval = %v", w.Activities.HeartbeatInterval)
			}
		}},
		{"log settings", []string{"--log-level=debug"}, MapEnv{"RALPH_LOG_FORMAT": "json"}, func(t *testing.T, w Worker) {
			if w.LogLevel != slog.LevelDebug || w.LogFormat != "json" {
				t.Errorf("log = %v %q", w.LogLevel, w.LogFormat)
			}
		}},
		{"connection overrides", []string{"--address", "h:1", "--namespace", "ns"}, MapEnv{}, func(t *testing.T, w Worker) {
			if w.Connection != (Connection{Address: "h:1", Namespace: "ns"}) {
				t.Errorf("connection = %+v", w.Connection)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := LoadWorker(tt.args, tt.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, w)
		})
	}
}

func TestLoadWorkerErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  MapEnv
		want []string // substrings of the error
	}{
		{"not a number", nil, MapEnv{"RALPH_MAX_ROUNDS": "abc"}, []string{"RALPH_MAX_ROUNDS", `"abc"`, "positive integer"}},
		{"zero", nil, MapEnv{"RALPH_MAX_HANDOFF_CHARS": "0"}, []string{"RALPH_MAX_HANDOFF_CHARS", `"0"`}},
		{"negative", nil, MapEnv{"RALPH_CONCURRENT_ROUNDS": "-2"}, []string{"RALPH_CONCURRENT_ROUNDS", `"-2"`}},
		{"float", nil, MapEnv{"RALPH_ROUND_TIMEOUT_SECONDS": "1.5"}, []string{"RALPH_ROUND_TIMEOUT_SECONDS", `"1.5"`}},
		{"overflow", nil, MapEnv{"RALPH_ROUND_ATTEMPTS": "99999999999"}, []string{"RALPH_ROUND_ATTEMPTS", "99999999999"}},
		{"bad flag value names the flag", []string{"--max-model-calls=lots"}, MapEnv{}, []string{"--max-model-calls", `"lots"`}},
		{"bad flag beats good env", []string{"--rounds-per-run", "0"}, MapEnv{"RALPH_ROUNDS_PER_RUN": "3"}, []string{"--rounds-per-run", `"0"`}},
		{"empty flag number", []string{"--max-result-chars="}, MapEnv{}, []string{"--max-result-chars", `""`}},
		{"seconds", nil, MapEnv{"RALPH_MODEL_CALL_TIMEOUT_SECONDS": "5m"}, []string{"RALPH_MODEL_CALL_TIMEOUT_SECONDS", `"5m"`}},
		{"bool", nil, MapEnv{"RALPH_DEMO": "maybe"}, []string{"RALPH_DEMO", `"maybe"`}},
		{"review", nil, MapEnv{"RALPH_REVIEW": "yes"}, []string{"RALPH_REVIEW", `"yes"`, "off, on"}},
		{"approve", nil, MapEnv{"RALPH_APPROVE": "rounds:0"}, []string{"RALPH_APPROVE", `"rounds:0"`, "none, complete or rounds:N"}},
		{"candidates over ceiling", nil, MapEnv{"RALPH_GIT": "local", "RALPH_CANDIDATES": "5"}, []string{"RALPH_CANDIDATES=5", "RALPH_MAX_CANDIDATES=4"}},
		{"candidates ceiling", nil, MapEnv{"RALPH_MAX_CANDIDATES": "17"}, []string{"RALPH_MAX_CANDIDATES=17 is over 16"}},
		{"campaign parallel ceiling", nil, MapEnv{"RALPH_MAX_CAMPAIGN_PARALLEL": "1001"}, []string{"RALPH_MAX_CAMPAIGN_PARALLEL=1001 is over 1000", "2,000"}},
		{"campaign tasks ceiling", nil, MapEnv{"RALPH_MAX_CAMPAIGN_TASKS": "5001"}, []string{"RALPH_MAX_CAMPAIGN_TASKS=5001 is over 5000", "1 MiB"}},
		{"wave tasks ceiling", nil, MapEnv{"RALPH_MAX_WAVE_TASKS": "1001"}, []string{"RALPH_MAX_WAVE_TASKS=1001 is over 1000"}},
		{"max waves", nil, MapEnv{"RALPH_MAX_WAVES": "0"}, []string{"RALPH_MAX_WAVES"}},
		{"candidates without git", nil, MapEnv{"RALPH_CANDIDATES": "2"}, []string{"RALPH_CANDIDATES=2", "RALPH_GIT=local or remote"}},
		{"candidate agent", nil, MapEnv{"RALPH_CANDIDATE_AGENTS": "builtin,aider"}, []string{"RALPH_CANDIDATE_AGENTS", `"aider" is not a provider`}},
		{"candidate score", nil, MapEnv{"RALPH_CANDIDATE_SCORE": "tests"}, []string{"RALPH_CANDIDATE_SCORE", "none or verify"}},
		{"notify events", nil, MapEnv{"RALPH_NOTIFY_EVENTS": "complete,done"}, []string{"RALPH_NOTIFY_EVENTS", `"done" is not an event`}},
		{"notify url", nil, MapEnv{"RALPH_NOTIFY_URL": "hooks.example/T0"}, []string{"RALPH_NOTIFY_URL", "http or https URL"}},
		{"protected pattern", nil, MapEnv{"RALPH_PROTECTED_PATHS": "tests/**,[z-a"}, []string{"RALPH_PROTECTED_PATHS", "[z-a", "not a valid gitignore pattern"}},
		{"review diff chars", nil, MapEnv{"RALPH_REVIEW_DIFF_CHARS": "0"}, []string{"RALPH_REVIEW_DIFF_CHARS", `"0"`}},
		{"transcript cap", nil, MapEnv{"RALPH_TRANSCRIPT_MAX_MB": "0"}, []string{"RALPH_TRANSCRIPT_MAX_MB", `"0"`}},
		{"transcript cap not a number", []string{"--transcript-max-mb=1g"}, MapEnv{}, []string{"--transcript-max-mb", `"1g"`}},
		{"heartbeat vs round timeout", nil, MapEnv{"RALPH_HEARTBEAT_TIMEOUT_SECONDS": "60", "RALPH_ROUND_TIMEOUT_SECONDS": "60"},
			[]string{"RALPH_HEARTBEAT_TIMEOUT_SECONDS", "RALPH_ROUND_TIMEOUT_SECONDS"}},
		{"bad base url", nil, MapEnv{"OPENAI_BASE_URL": "localhost:8080"}, []string{"OPENAI_BASE_URL", "localhost:8080"}},
		{"empty task queue flag", []string{"--task-queue="}, MapEnv{}, []string{"RALPH_TASK_QUEUE"}},
		{"sessions inside workspaces", nil, MapEnv{"RALPH_WORKSPACE_ROOT": "/tmp/r", "RALPH_SESSION_DIR": "/tmp/r/demo/s"},
			[]string{"RALPH_SESSION_DIR", "RALPH_WORKSPACE_ROOT"}},
		{"sessions equal workspaces", nil, MapEnv{"RALPH_WORKSPACE_ROOT": "/tmp/r", "RALPH_SESSION_DIR": "/tmp/r/"},
			[]string{"RALPH_SESSION_DIR"}},
		{"workspaces inside sessions", nil, MapEnv{"RALPH_WORKSPACE_ROOT": "/tmp/s/ws", "RALPH_SESSION_DIR": "/tmp/s"},
			[]string{"RALPH_WORKSPACE_ROOT", "RALPH_SESSION_DIR"}},
		{"max command timeout below default", nil, MapEnv{"RALPH_COMMAND_TIMEOUT_SECONDS": "60", "RALPH_MAX_COMMAND_TIMEOUT_SECONDS": "30"},
			[]string{"RALPH_MAX_COMMAND_TIMEOUT_SECONDS", "RALPH_COMMAND_TIMEOUT_SECONDS"}},
		{"rounds per run ceiling", nil, MapEnv{"RALPH_ROUNDS_PER_RUN": "101"}, []string{"RALPH_ROUNDS_PER_RUN", "101", "ceiling of 100"}},
		{"handoff ceiling", []string{"--max-handoff-chars", "65537"}, MapEnv{}, []string{"--max-handoff-chars", "ceiling of 65536"}},
		{"objective ceiling", nil, MapEnv{"RALPH_MAX_OBJECTIVE_CHARS": "262145"}, []string{"RALPH_MAX_OBJECTIVE_CHARS", "ceiling of 262144"}},
		{"log level", nil, MapEnv{"RALPH_LOG_LEVEL": "loud"}, []string{"RALPH_LOG_LEVEL", "loud"}},
		{"agent", nil, MapEnv{"RALPH_AGENT": "aider"}, []string{"RALPH_AGENT", `"aider"`, "builtin, claude-code, codex, opencode"}},
		{"review agent", nil, MapEnv{"RALPH_REVIEW_AGENT": "gemini"}, []string{"RALPH_REVIEW_AGENT", `"gemini"`}},
		{"plan agent", nil, MapEnv{"RALPH_PLAN_AGENT": "gemini"}, []string{"RALPH_PLAN_AGENT", `"gemini"`}},
		{"agent idle seconds", nil, MapEnv{"RALPH_AGENT_IDLE_SECONDS": "0"}, []string{"RALPH_AGENT_IDLE_SECONDS", `"0"`}},
		{"wire api", nil, MapEnv{"RALPH_WIRE_API": "completions"}, []string{"RALPH_WIRE_API", "completions", "chat, responses"}},
		{"reasoning effort", nil, MapEnv{"RALPH_REASONING_EFFORT": "max"}, []string{"RALPH_REASONING_EFFORT", `"max"`}},
		{"extra body not an object", nil, MapEnv{"RALPH_EXTRA_BODY": `["enable_thinking"]`}, []string{"RALPH_EXTRA_BODY", "JSON object"}},
		{"max tokens field", nil, MapEnv{"RALPH_MAX_TOKENS_FIELD": "max_output_tokens"}, []string{"RALPH_MAX_TOKENS_FIELD", "max_completion_tokens"}},
		{"idle seconds", nil, MapEnv{"RALPH_MODEL_IDLE_SECONDS": "0"}, []string{"RALPH_MODEL_IDLE_SECONDS", `"0"`}},
		{"unknown flag", []string{"--max-roundz=3"}, MapEnv{}, []string{"max-roundz"}},
		{"positional", []string{"extra"}, MapEnv{}, []string{`"extra"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadWorker(tt.args, tt.env, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestWorkerNeverShowsAPIKey(t *testing.T) {
	var buf bytes.Buffer
	w, err := LoadWorker([]string{"--model", "m"}, MapEnv{"OPENAI_API_KEY": "sk-very-secret"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("start", w.LogAttrs()...)
	if strings.Contains(logs.String(), "sk-very-secret") {
		t.Errorf("log attrs leak the API key: %s", logs.String())
	}
	if !strings.Contains(logs.String(), `"apiKeySet":true`) {
		t.Errorf("log attrs should say a key is set: %s", logs.String())
	}
	// --help lists every variable but never the key's value
	buf.Reset()
	_, err = LoadWorker([]string{"--help"}, MapEnv{"OPENAI_API_KEY": "sk-very-secret"}, &buf)
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("help: %v", err)
	}
	for _, want := range []string{"RALPH_MAX_ROUNDS", "--max-rounds", "256", "OPENAI_API_KEY", "RALPH_CONCURRENT_ROUNDS", "TEMPORAL_ADDRESS"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "sk-very-secret") {
		t.Error("usage leaks the API key")
	}
}

func TestHeartbeatInterval(t *testing.T) {
	for _, tt := range []struct {
		seconds int
		want    time.Duration
	}{{1, 200 * time.Millisecond}, {2, 400 * time.Millisecond}, {5, time.Second}, {60, time.Second}} {
		if got := HeartbeatInterval(tt.seconds); got != tt.want {
			t.Errorf("HeartbeatInterval(%d) = %v, want %v", tt.seconds, got, tt.want)
		}
	}
}

func TestStarterConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     MapEnv
		want    Starter
		wantErr []string
	}{
		{"defaults", nil, MapEnv{}, Starter{TaskQueue: "ralph", MaxResultChars: 16384}, nil},
		{"env", nil, MapEnv{"RALPH_TASK_QUEUE": "q", "RALPH_MAX_RESULT_CHARS": "99"}, Starter{TaskQueue: "q", MaxResultChars: 99}, nil},
		{"flags win", []string{"--task-queue", "f", "--max-result-chars", "5", "--address", "a:1", "--namespace", "n"},
			MapEnv{"RALPH_TASK_QUEUE": "q", "RALPH_MAX_RESULT_CHARS": "99"},
			Starter{TaskQueue: "f", MaxResultChars: 5, Connection: Connection{Address: "a:1", Namespace: "n"}}, nil},
		{"bad env", nil, MapEnv{"RALPH_MAX_RESULT_CHARS": "x"}, Starter{}, []string{"RALPH_MAX_RESULT_CHARS", `"x"`}},
		{"bad flag", []string{"--max-result-chars=0"}, MapEnv{}, Starter{}, []string{"--max-result-chars", `"0"`}},
		{"empty queue", []string{"--task-queue="}, MapEnv{}, Starter{}, []string{"--task-queue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := NewStarterFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.Resolve(tt.env)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.Tracing = Tracing{} // TestLoadTracing covers it
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClientOptions(t *testing.T) {
	env := MapEnv{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none.toml")}
	opts, err := ClientOptions(env, Connection{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostPort != "localhost:7233" || opts.Namespace != "default" {
		t.Errorf("defaults: %q %q", opts.HostPort, opts.Namespace)
	}
	env["TEMPORAL_ADDRESS"] = "temporal:7233"
	env["TEMPORAL_NAMESPACE"] = "prod"
	opts, err = ClientOptions(env, Connection{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostPort != "temporal:7233" || opts.Namespace != "prod" {
		t.Errorf("env: %q %q", opts.HostPort, opts.Namespace)
	}
	opts, err = ClientOptions(env, Connection{Address: "x:1", Namespace: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostPort != "x:1" || opts.Namespace != "y" {
		t.Errorf("overrides: %q %q", opts.HostPort, opts.Namespace)
	}
	env["TEMPORAL_API_KEY"] = "k"
	opts, err = ClientOptions(env, Connection{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Credentials == nil || opts.ConnectionOptions.TLS == nil {
		t.Error("TEMPORAL_API_KEY should set credentials and TLS")
	}
}

func TestWorkerLogsTheModelURLWithoutCredentials(t *testing.T) {
	for _, raw := range []string{
		"https://alice:pa55word@gateway.example/v1",
		"https://proxy.example/openai/v1?api-key=k3y-in-query&x=1",
	} {
		w, err := LoadWorker(nil, MapEnv{"OPENAI_BASE_URL": raw}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		slog.New(slog.NewTextHandler(&logs, nil)).Info("start", w.LogAttrs()...)
		for _, secret := range []string{"alice", "pa55word", "k3y-in-query", "api-key"} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("log line for %s leaks %q: %s", raw, secret, logs.String())
			}
		}
		if !strings.Contains(logs.String(), ".example/") {
			t.Errorf("log line lost the host: %s", logs.String())
		}
	}
}

func TestSplitList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value, seps string
		want        []string
	}{
		{"", ",", []string{}},
		{" , ,", ",", []string{}},
		{"a, b ,,c", ",", []string{"a", "b", "c"}},
		{"host:443, *.example.com", ",", []string{"host:443", "*.example.com"}},
		{"/a:/b, /c", ":,", []string{"/a", "/b", "/c"}},
		{"qwen2.5-coder:32b,llama3", ",", []string{"qwen2.5-coder:32b", "llama3"}},
	} {
		if got := splitList(tc.value, tc.seps); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitList(%q, %q) = %q, want %q", tc.value, tc.seps, got, tc.want)
		}
	}
}
