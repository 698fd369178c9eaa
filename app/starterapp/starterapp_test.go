package starterapp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

func TestParseArgs(t *testing.T) {
	objFile := filepath.Join(t.TempDir(), "objective.md")
	if err := os.WriteFile(objFile, []byte("from a file\nsecond line"), 0o644); err != nil {
		t.Fatal(err)
	}
	three := 3
	tests := []struct {
		name  string
		args  []string
		env   config.MapEnv
		stdin string
		want  command
		input *workflows.Input
	}{
		{name: "run with workspace", args: []string{"run", "--objective", "fix it", "--workspace", "demo"},
			want:  command{name: "run", objective: "fix it", workspace: "demo", workflowID: "ralph-demo"},
			input: &workflows.Input{Objective: "fix it", Workspace: "demo"}},
		{name: "start with everything", args: []string{"start", "--objective=o", "--workspace=team/repo", "--workflow-id", "fix-tests", "--max-rounds", "3", "--task-queue", "q"},
			want:  command{name: "start", objective: "o", workspace: "team/repo", workflowID: "fix-tests", maxRounds: 3},
			input: &workflows.Input{Objective: "o", Workspace: "team/repo", MaxRounds: &three}},
		{name: "workflow id without workspace", args: []string{"run", "--objective", "o", "--workflow-id", "fix-tests"},
			want:  command{name: "run", objective: "o", workflowID: "fix-tests"},
			input: &workflows.Input{Objective: "o"}},
		{name: "objective file", args: []string{"run", "--objective-file", objFile, "--workspace", "w"},
			want: command{name: "run", objective: "from a file\nsecond line", objectiveFile: objFile, workspace: "w", workflowID: "ralph-w"}},
		{name: "objective stdin", args: []string{"start", "--objective-file", "-", "--workspace", "w"}, stdin: "piped",
			want: command{name: "start", objective: "piped", objectiveFile: "-", workspace: "w", workflowID: "ralph-w"}},
		{name: "allow no worker", args: []string{"start", "--objective", "o", "--workspace", "w", "--allow-no-worker"},
			want: command{name: "start", objective: "o", workspace: "w", workflowID: "ralph-w", allowNoWorker: true}},
		{name: "status by id", args: []string{"status", "--workflow-id", "x"}, want: command{name: "status", workflowID: "x"}},
		{name: "status positional", args: []string{"status", "x"}, want: command{name: "status", workflowID: "x"}},
		{name: "status by workspace", args: []string{"status", "--workspace", "demo"}, want: command{name: "status", workspace: "demo", workflowID: "ralph-demo"}},
		{name: "cancel no wait", args: []string{"cancel", "--no-wait", "x"}, want: command{name: "cancel", workflowID: "x", noWait: true}},
		{name: "result json", args: []string{"result", "--json", "--workspace", "a"}, want: command{name: "result", workspace: "a", workflowID: "ralph-a", jsonOut: true}},
		{name: "run attach", args: []string{"run", "--objective", "o", "--workspace", "w", "--if-running", "attach"},
			want: command{name: "run", objective: "o", workspace: "w", workflowID: "ralph-w", ifRunning: "attach"}},
		{name: "extend", args: []string{"extend", "x", "--max-tokens", "9000", "--max-minutes", "90"},
			want: command{name: "extend", workflowID: "x", maxTokens: 9000, maxMinutes: 90}},
		{name: "guide a campaign's task", args: []string{"guide", "--workflow-id", "c", "--task", "t1", "--text", "lexer first"},
			want: command{name: "guide", workflowID: "c", task: "t1", text: "lexer first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = config.MapEnv{}
			}
			got, err := parseArgs(tt.args, env, strings.NewReader(tt.stdin), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.cfg = got.cfg
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if tt.input != nil {
				in := got.input()
				if in.Objective != tt.input.Objective || in.Workspace != tt.input.Workspace ||
					(in.MaxRounds == nil) != (tt.input.MaxRounds == nil) ||
					(in.MaxRounds != nil && *in.MaxRounds != *tt.input.MaxRounds) {
					t.Errorf("input = %+v, want %+v", in, *tt.input)
				}
			}
		})
	}
}

func TestParseArgsConfig(t *testing.T) {
	cmd, err := parseArgs([]string{"run", "--objective", "o", "--workspace", "w"},
		config.MapEnv{"RALPH_TASK_QUEUE": "other", "RALPH_MAX_RESULT_CHARS": "100"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.cfg.TaskQueue != "other" || cmd.cfg.MaxResultChars != 100 {
		t.Errorf("cfg = %+v", cmd.cfg)
	}
	cmd, err = parseArgs([]string{"run", "--objective", "o", "--workspace", "w", "--task-queue", "mine", "--address", "h:1"},
		config.MapEnv{"RALPH_TASK_QUEUE": "other"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.cfg.TaskQueue != "mine" || cmd.cfg.Connection.Address != "h:1" {
		t.Errorf("cfg = %+v", cmd.cfg)
	}
}

func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  config.MapEnv
		want string
	}{
		{"no command", nil, nil, "command is required"},
		{"unknown command", []string{"launch"}, nil, `unknown command "launch"`},
		{"no objective", []string{"run", "--workspace", "w"}, nil, "--objective is required"},
		{"bad if-running", []string{"start", "--workspace", "w", "--objective", "o", "--if-running", "join"}, nil, `--if-running must be attach or fail, got "join"`},
		{"extend nothing", []string{"extend", "x"}, nil, "extend needs at least one of --max-rounds, --max-tokens, --max-minutes"},
		{"extend zero", []string{"extend", "x", "--max-rounds", "0"}, nil, "--max-rounds"},
		{"guide without text", []string{"guide", "x", "--text", " "}, nil, "guide needs --text"},
		{"blank objective", []string{"run", "--workspace", "w", "--objective", "  "}, nil, "--objective is required"},
		{"both objectives", []string{"run", "--workspace", "w", "--objective", "o", "--objective-file", "f"}, nil, "not both"},
		{"missing objective file", []string{"run", "--workspace", "w", "--objective-file", "/nonexistent/x"}, nil, "--objective-file"},
		{"no workspace or id", []string{"run", "--objective", "o"}, nil, "--workspace is required"},
		{"absolute workspace", []string{"run", "--objective", "o", "--workspace", "/etc"}, nil, "--workspace: \"/etc\" is absolute: it must be relative"},
		{"escaping workspace", []string{"run", "--objective", "o", "--workspace", "../x"}, nil, "no .."},
		{"unclean workspace", []string{"run", "--objective", "o", "--workspace", "a//b"}, nil, "clean path"},
		{"zero rounds", []string{"run", "--objective", "o", "--workspace", "w", "--max-rounds", "0"}, nil, `--max-rounds="0"`},
		{"float rounds", []string{"run", "--objective", "o", "--workspace", "w", "--max-rounds", "2.5"}, nil, `--max-rounds="2.5"`},
		{"positional on run", []string{"run", "--objective", "o", "--workspace", "w", "extra"}, nil, `unexpected argument "extra"`},
		{"unknown flag", []string{"run", "--objectiv", "o"}, nil, "objectiv"},
		{"flag of another command", []string{"status", "--objective", "o", "x"}, nil, "objective"},
		{"status without id", []string{"status"}, nil, "which run?"},
		{"two ids", []string{"status", "--workflow-id", "a", "b"}, nil, "two workflow ids"},
		{"too many ids", []string{"cancel", "a", "b"}, nil, `unexpected argument "b"`},
		{"bad env", []string{"status", "x"}, config.MapEnv{"RALPH_MAX_RESULT_CHARS": "-1"}, `RALPH_MAX_RESULT_CHARS="-1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = config.MapEnv{}
			}
			_, err := parseArgs(tt.args, env, nil, io.Discard)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not a usage error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestMainUsageExitCodes(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
	}{
		{nil, ExitUsage},
		{[]string{"--help"}, ExitComplete},
		{[]string{"run", "--help"}, ExitComplete},
		{[]string{"run"}, ExitUsage},
		{[]string{"nope"}, ExitUsage},
	} {
		var stderr bytes.Buffer
		app := &App{Env: config.MapEnv{}, Stdout: io.Discard, Stderr: &stderr}
		if got := app.Main(tt.args); got != tt.code {
			t.Errorf("Main(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.code, stderr.String())
		}
	}
}

func TestMainUnreachableServer(t *testing.T) {
	var stderr bytes.Buffer
	app := &App{Env: config.MapEnv{"TEMPORAL_ADDRESS": "127.0.0.1:1", "TEMPORAL_CONFIG_FILE": "/nonexistent"},
		Stdout: io.Discard, Stderr: &stderr, DialTimeout: 3 * time.Second}
	code := app.Main([]string{"status", "x"})
	if code != ExitFailed {
		t.Errorf("exit code %d, want %d", code, ExitFailed)
	}
	if !strings.Contains(stderr.String(), "127.0.0.1:1 is unreachable") {
		t.Errorf("stderr does not name the unreachable server:\n%s", stderr.String())
	}
}

func TestExitCode(t *testing.T) {
	for status, want := range map[string]int{"complete": 0, "blocked": 3, "budget-limited": 4, "weird": 1} {
		if got, _ := ExitCode(status); got != want {
			t.Errorf("ExitCode(%q) = %d, want %d", status, got, want)
		}
	}
}

// roundTrip passes an error through the default failure converter, as a
// client receives a workflow failure.
func roundTrip(err error) error {
	fc := temporal.GetDefaultFailureConverter()
	return fc.FailureToError(fc.ErrorToFailure(err))
}

func TestFailureText(t *testing.T) {
	last := &report.Report{Status: "continue", Summary: "did a thing", Evidence: []string{}, NextSteps: []string{"do more"}, Blocker: ""}
	rf := roundTrip(temporal.NewNonRetryableApplicationError("round 2 failed: model said 401", workflows.ErrTypeRoundFailed, nil,
		workflows.RoundFailedDetails{FailedRound: 2, LastHandoff: last}))
	text := FailureText("ralph-demo", rf)
	for _, want := range []string{"Run ralph-demo failed: RoundFailed: round 2 failed: model said 401", "Failed round: 2", "Last accepted handoff:", `"summary": "did a thing"`} {
		if !strings.Contains(text, want) {
			t.Errorf("RoundFailed text lacks %q:\n%s", want, text)
		}
	}
	first := roundTrip(temporal.NewNonRetryableApplicationError("round 1 failed", workflows.ErrTypeRoundFailed, nil,
		workflows.RoundFailedDetails{FailedRound: 1}))
	if text := FailureText("x", first); !strings.Contains(text, "Last accepted handoff: none") {
		t.Errorf("first-round failure:\n%s", text)
	}
	ii := roundTrip(temporal.NewNonRetryableApplicationError("invalid input: objective: is required", workflows.ErrTypeInvalidInput, nil))
	if text := FailureText("x", ii); !strings.Contains(text, "InvalidInput: invalid input: objective: is required") {
		t.Errorf("InvalidInput text:\n%s", text)
	}
	ir := roundTrip(temporal.NewNonRetryableApplicationError("bad report", workflows.ErrTypeInvalidReport, nil,
		workflows.InvalidReportDetails{Round: 4, Problem: "summary: must be trimmed", LastHandoff: last}))
	if text := FailureText("x", ir); !strings.Contains(text, "Round: 4") || !strings.Contains(text, "must be trimmed") {
		t.Errorf("InvalidReport text:\n%s", text)
	}
}

func TestProgressPrinter(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &progressPrinter{out: &out, started: now, taskQueue: "ralph", now: func() time.Time { return now }}
	rep := func(status, summary string) *report.Report {
		return &report.Report{Status: status, Summary: summary, Evidence: []string{}, NextSteps: []string{}}
	}

	p.update(workflows.Status{}, errors.New("not ready"))
	now = now.Add(6 * time.Second)
	p.update(workflows.Status{}, errors.New("not ready"))
	p.update(workflows.Status{}, errors.New("not ready")) // said once
	p.update(workflows.Status{Round: 1, MaxRounds: 8, Phase: "running"}, nil)
	p.update(workflows.Status{Round: 1, MaxRounds: 8, Phase: "running"}, nil) // no change
	now = now.Add(65 * time.Second)
	// round 1 finished and round 2 started between two polls
	p.update(workflows.Status{Round: 2, MaxRounds: 8, Phase: "running", LastReport: rep("continue", "wrote\n  code"),
		Rounds: []workflows.RoundSummary{{Round: 1, Status: "continue", Summary: "wrote\n  code"}}}, nil)
	// continue-as-new: the new run lists no rounds; rounds 2 and 3 finished unseen
	p.update(workflows.Status{Round: 4, MaxRounds: 8, Phase: "running", LastReport: rep("continue", "round three")}, nil)
	p.update(workflows.Status{Round: 4, MaxRounds: 8, Phase: "finished", LastReport: rep("complete", "all done"),
		Rounds: []workflows.RoundSummary{{Round: 4, Status: "complete", Summary: "all done"}}}, nil)

	want := `[00:06] waiting for a worker on task queue ralph to pick up the run…
[00:06] round 1/8 running…
[01:11] round 1/8 continue: wrote code
[01:11] round 2/8 running…
[01:11] round 2/8 finished in an earlier run of this workflow (see its history)
[01:11] round 3/8 continue: round three
[01:11] round 4/8 running…
[01:11] round 4/8 complete: all done
`
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestStaticSummary(t *testing.T) {
	if got := staticSummary("  make tests pass\nmore detail"); got != "Ralph: make tests pass …" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("é", 300)
	if got := staticSummary(long); len([]rune(got)) != len("Ralph: ")+200 {
		t.Errorf("length %d", len([]rune(got)))
	}
}

func TestProgressShowsPauseAndStop(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &progressPrinter{out: &out, started: now, taskQueue: "ralph", workflowID: "ralph-w", now: func() time.Time { return now }}
	done := &report.Report{Status: "continue", Summary: "first", Evidence: []string{}, NextSteps: []string{"more"}}
	round1 := []workflows.RoundSummary{{Round: 1, Status: "continue", Summary: "first"}}
	p.update(workflows.Status{Round: 1, MaxRounds: 4, Phase: "running", PauseRequested: true}, nil)
	p.update(workflows.Status{Round: 1, MaxRounds: 4, Phase: "paused", PauseRequested: true, LastReport: done, Rounds: round1}, nil)
	p.update(workflows.Status{Round: 1, MaxRounds: 4, Phase: "paused", PauseRequested: true, LastReport: done, Rounds: round1}, nil)
	p.update(workflows.Status{Round: 2, MaxRounds: 4, Phase: "running", LastReport: done, Rounds: round1}, nil)
	p.update(workflows.Status{Round: 2, MaxRounds: 4, Phase: "running", StopRequested: true, LastReport: done, Rounds: round1}, nil)
	want := `[00:00] round 1/4 running…
[00:00] round 1/4 continue: first
[00:00] paused before round 2/4 (resume with: starter resume ralph-w)
[00:00] resumed
[00:00] round 2/4 running…
[00:00] stop requested: the run ends after its running round
`
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestProgressShowsAWait(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &progressPrinter{out: &out, started: now, taskQueue: "ralph", workflowID: "ralph-w", now: func() time.Time { return now }}
	waiting := workflows.Status{Round: 1, MaxRounds: 4, Phase: "waiting", WaitingUntil: "2026-12-01T18:00:00Z", WaitReason: "rate-limited", Rounds: []workflows.RoundSummary{}}
	p.update(workflows.Status{Round: 1, MaxRounds: 4, Phase: "running"}, nil)
	p.update(waiting, nil)
	p.update(waiting, nil)
	paused := waiting
	paused.Phase = "paused"
	p.update(paused, nil)
	p.update(waiting, nil)
	p.update(workflows.Status{Round: 1, MaxRounds: 4, Phase: "running"}, nil)
	want := `[00:00] round 1/4 running…
[00:00] round 1/4 deferred (provider rate-limited): waiting until 2026-12-01T18:00:00Z, then a fresh session runs it again
[00:00] paused while round 1/4 waits for the provider (resume with: starter resume ralph-w)
[00:00] resumed
[00:00] round 1/4 running again after the wait…
`
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestParseControlAndBudgetFlags(t *testing.T) {
	cmd, err := parseArgs([]string{"run", "--objective", "x", "--workspace", "w", "--verify", " go test ./... ",
		"--max-tokens", "5000", "--max-minutes", "30"}, config.MapEnv{}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	in := cmd.input()
	if in.VerifyCommand != "go test ./..." || in.MaxTokens == nil || *in.MaxTokens != 5000 || in.MaxMinutes == nil || *in.MaxMinutes != 30 || in.MaxRounds != nil {
		t.Fatalf("input = %+v", in)
	}
	cmd, err = parseArgs([]string{"stop", "--reason", "review", "ralph-w"}, config.MapEnv{}, nil, io.Discard)
	if err != nil || cmd.name != cmdStop || cmd.reason != "review" || cmd.workflowID != "ralph-w" {
		t.Fatalf("stop = %+v, %v", cmd, err)
	}
	for _, verb := range []string{"pause", "resume"} {
		if cmd, err := parseArgs([]string{verb, "--workspace", "w"}, config.MapEnv{}, nil, io.Discard); err != nil || cmd.workflowID != "ralph-w" {
			t.Fatalf("%s = %+v, %v", verb, cmd, err)
		}
	}
	for _, bad := range [][]string{
		{"run", "--objective", "x", "--workspace", "w", "--verify", "  "},
		{"run", "--objective", "x", "--workspace", "w", "--max-tokens", "0"},
		{"run", "--objective", "x", "--workspace", "w", "--max-minutes", "1.5"},
		{"pause"},
		{"stop", "--objective", "x", "ralph-w"},
	} {
		if _, err := parseArgs(bad, config.MapEnv{}, nil, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if code, ok := ExitCode("stopped"); !ok || code != 5 {
		t.Errorf("stopped exits %d", code)
	}
}

func TestFlagsMayFollowTheWorkflowID(t *testing.T) {
	cmd, err := parseArgs([]string{"stop", "ralph-w", "--reason", "review done"}, config.MapEnv{}, nil, io.Discard)
	if err != nil || cmd.workflowID != "ralph-w" || cmd.reason != "review done" {
		t.Fatalf("stop = %+v, %v", cmd, err)
	}
	if _, err := parseArgs([]string{"status", "a", "b"}, config.MapEnv{}, nil, io.Discard); err == nil {
		t.Fatal("two workflow ids accepted")
	}
}

func TestProgressListsCandidates(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(0, 0)
	p := &progressPrinter{out: &out, started: now, taskQueue: "ralph", now: func() time.Time { return now }}
	p.update(workflows.Status{Round: 1, MaxRounds: 3, Phase: "running", Rounds: []workflows.RoundSummary{{Round: 1, Status: "complete", Summary: "done",
		Candidates: []workflows.CandidateSummary{
			{Number: 1, Provider: "builtin", Model: "gpt-x", Outcome: "complete", Usage: usage.Usage{ModelCalls: 4}, Chosen: true,
				Reason: "a verified complete, the first candidate to finish one"},
			{Number: 2, Provider: "codex", Outcome: "continue", Usage: usage.Usage{ModelCalls: 2}, Ref: "refs/ralph/candidates/w/round-1/2"},
			{Number: 3, Outcome: "failed", Problem: "round 1: no report\nafter 3 tries"},
		}}}}, nil)
	want := `[00:00] round 1/3 complete: done
[00:00]   candidate 1 (builtin gpt-x): complete, 4 model calls; chosen: a verified complete, the first candidate to finish one
[00:00]   candidate 2 (codex): continue, 2 model calls; kept on refs/ralph/candidates/w/round-1/2
[00:00]   candidate 3 (the worker's agent): failed, 0 model calls: round 1: no report after 3 tries
`
	if out.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}
