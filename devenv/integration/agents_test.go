package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// The agent providers on the real stack (docs/agents.md): the real worker
// runs each round with the real CLI (installed by
// scripts/install-agent-clis.sh) in real bubblewrap, against the scripted
// server speaking that CLI's API.

func TestRealStackAgentCodex(t *testing.T)      { agentRunEndsVerified(t, "codex", "codex") }
func TestRealStackAgentClaudeCode(t *testing.T) { agentRunEndsVerified(t, "claude-code", "claude") }
func TestRealStackAgentOpencode(t *testing.T)   { agentRunEndsVerified(t, "opencode", "opencode") }

// agentsBin is where scripts/install-agent-clis.sh puts the pinned CLIs.
const agentsBin = "/opt/ralph-agents/node_modules/.bin/"

// agentEnv is a test's world for CLI rounds: real bubblewrap, and the
// scripted server as the Anthropic upstream too (claude-code).
func agentEnv(t *testing.T, script fakeopenai.Script, extraEnv ...string) *env {
	e := newEnv(t, script, append([]string{"RALPH_SANDBOX=bwrap", "ANTHROPIC_API_KEY=" + testAPIKey}, extraEnv...)...)
	e.workerEnv = append(e.workerEnv, "ANTHROPIC_BASE_URL="+strings.TrimSuffix(e.model.BaseURL(), "/v1"))
	return e
}

// agentRunEndsVerified: a two-round run ends in a verified complete; its
// usage is what the server served; every request upstream carried the
// worker's key and none held it in its body, although round 1 printed the
// CLI's environment and every process's in the sandbox back to the model;
// the key is nowhere on disk, in logs or in history.
func agentRunEndsVerified(t *testing.T, kind, binary string) {
	t.Parallel()
	per := openai.Usage{PromptTokens: 700, CompletionTokens: 30, TotalTokens: 730}
	var mu sync.Mutex
	served := 0
	script := fakeopenai.AgentScript{Usage: &per,
		Command: func(round int) string {
			if round == 1 {
				return "echo hello > hello.txt && env && cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | sort -u"
			}
			return "cat hello.txt"
		},
		Report: func(round int, _ string) fakeopenai.ReportArgs {
			if round == 1 {
				return continueArgs("Wrote hello.txt.", "Check hello.txt.")
			}
			return completeArgs("hello.txt holds hello.", "cat hello.txt printed hello")
		},
	}
	e := agentEnv(t, fakeopenai.Script{Rule: script.Rule, Delivered: func(fakeopenai.Request, fakeopenai.Response) {
		mu.Lock()
		served++
		mu.Unlock()
	}}, "RALPH_AGENT="+kind, "RALPH_AGENT_COMMAND="+agentsBin+binary)
	w := e.startWorker()
	if !strings.Contains(w.out.String(), "agentCLI."+kind) {
		t.Errorf("the start line does not name the CLI:\n%s", tail(w.out.String(), 2000))
	}
	id := "agent-" + kind
	res, err := e.result(e.start(id, `{"objective":"write hello.txt","verifyCommand":"grep -qx hello hello.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result %+v", res)
	}
	if st := e.status(id); len(st.Rounds) != 2 || !st.Rounds[1].Verified {
		t.Errorf("rounds %+v", st.Rounds)
	}
	mu.Lock()
	n := served
	mu.Unlock()
	want := usage.Usage{ModelCalls: n, ToolCalls: 2, PromptTokens: n * per.PromptTokens, CompletionTokens: n * per.CompletionTokens}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v (%d answers served)", res.Usage, want, n)
	}
	printed := false
	for _, req := range e.model.Requests() {
		if h := req.Header.Get("Authorization") + req.Header.Get("x-api-key"); !strings.Contains(h, testAPIKey) {
			t.Errorf("request %d reached the server without the worker's key", req.Index)
		}
		if bytes.Contains(req.Raw, []byte(testAPIKey)) {
			t.Errorf("request %d body holds the worker's key", req.Index)
		}
		printed = printed || bytes.Contains(req.Raw, []byte("ralph-attempt-"))
	}
	if !printed {
		t.Error("no request carried the CLI's environment: the key check proved nothing")
	}
	if b, err := os.ReadFile(filepath.Join(e.root, id, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt: %q %v", b, err)
	}
	e.noKeyAnywhere(id)
}

func TestRealStackAgentKilledWorkerCodex(t *testing.T) {
	t.Parallel()
	agentRoundSurvivesAKilledWorker(t, "codex", "codex")
}
func TestRealStackAgentKilledWorkerClaudeCode(t *testing.T) {
	t.Parallel()
	agentRoundSurvivesAKilledWorker(t, "claude-code", "claude")
}
func TestRealStackAgentKilledWorkerOpencode(t *testing.T) {
	t.Parallel()
	agentRoundSurvivesAKilledWorker(t, "opencode", "opencode")
}

// attemptToken is a gateway token as the CLI's environment holds it.
var attemptToken = regexp.MustCompile(`ralph-attempt-[0-9a-f]{48}`)

// agentRoundSurvivesAKilledWorker: the worker is killed with SIGKILL while
// the CLI's shell runs a long command. Within a bounded wait nothing is
// left in the killed worker's command groups, where the CLI, its report
// helper and the command ran (the groups, not a working directory or a
// command line, say which processes are the attempt's: the other
// KilledWorker tests run the same command at the same time);
// a second worker runs the round again, a new attempt with a token of its
// own (each attempt's first command prints its token back to the model),
// and the run ends verified.
func agentRoundSurvivesAKilledWorker(t *testing.T, kind, binary string) {
	testkit.RequireCgroups(t)
	const long = "sleep 3041"
	script := fakeopenai.AgentScript{
		Commands: func(int) []string {
			return []string{"env | grep -o 'ralph-attempt-[0-9a-f]*' | sort -u",
				"if [ -e started ]; then echo resumed; else touch started; " + long + "; fi"}
		},
		Report: func(int, string) fakeopenai.ReportArgs {
			return completeArgs("Resumed after the crash.", "test -e started")
		},
	}
	e := agentEnv(t, fakeopenai.Script{Rule: script.Rule}, "RALPH_AGENT="+kind, "RALPH_AGENT_COMMAND="+agentsBin+binary)
	first := e.startWorker()
	id := "agent-killed-" + kind
	run := e.start(id, `{"objective":"survive a crash","workspace":"killed","verifyCommand":"test -e started"}`)
	t.Cleanup(func() { _ = e.client.TerminateWorkflow(context.Background(), id, "", "test over") })
	pid := first.cmd.Process.Pid
	running := awaitProcesses(t, pid, long, binary)
	t.Logf("running when the worker is killed:\n%s", strings.Join(running, "\n"))

	first.kill(t)
	var left []string
	err := wait.For(context.Background(), 10*time.Second, 100*time.Millisecond, func(context.Context) error {
		if left = testkit.ProcessesOfWorker(pid); len(left) > 0 {
			return errors.New("still running")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("10 s after the worker was killed, left running:\n%s\n(running before the kill:\n%s)",
			strings.Join(left, "\n"), strings.Join(running, "\n"))
	}
	before := distinctTokens(e.model.Requests())

	e.startWorker()
	res, err := e.result(run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
		t.Fatalf("result %+v", res)
	}
	if st := e.status(id); len(st.Rounds) != 1 || !st.Rounds[0].Verified {
		t.Errorf("rounds %+v", st.Rounds)
	}
	after := distinctTokens(e.model.Requests())
	if len(before) != 1 || len(after) != 2 || after[0] != before[0] {
		t.Errorf("tokens in the request log: %d before the kill, %d after (want the killed attempt's, then a new one)", len(before), len(after))
	}
	// The attempts' private homes (the CLI's state): the second worker swept
	// the killed one's when it started, and removed its own.
	if homes, err := os.ReadDir(filepath.Join(e.sessions, "homes", ".fresh")); err != nil || len(homes) > 0 {
		t.Errorf("private homes left after the run: %v %v", homes, err)
	}
}

// awaitProcesses waits until the processes in the command groups of the
// worker with pid include the command long, the CLI binary and its report
// helper, and lists them all.
func awaitProcesses(t *testing.T, pid int, long, binary string) []string {
	t.Helper()
	wanted := map[string]func(line string) bool{
		"the command":       func(l string) bool { return strings.Contains(l, long) },
		"the CLI":           func(l string) bool { return strings.Contains(l, binary) && !strings.Contains(l, "__ralph-agent-") },
		"the report helper": func(l string) bool { return strings.Contains(l, "__ralph-agent-report") },
	}
	var found []string
	err := wait.For(context.Background(), 3*time.Minute, 100*time.Millisecond, func(context.Context) error {
		found = testkit.ProcessesOfWorker(pid)
		for what, match := range wanted {
			if !slices.ContainsFunc(found, match) {
				return fmt.Errorf("%s is not running", what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the round's processes: %v; found:\n%s", err, strings.Join(found, "\n"))
	}
	return found
}

// distinctTokens are the gateway tokens the request log holds, in the
// order they first appear.
func distinctTokens(reqs []fakeopenai.Request) []string {
	var tokens []string
	for _, req := range reqs {
		for _, tok := range attemptToken.FindAllString(string(req.Raw), -1) {
			if !slices.Contains(tokens, tok) {
				tokens = append(tokens, tok)
			}
		}
	}
	return tokens
}

// TestRealStackAgentReviewOnAnotherProvider: RALPH_REVIEW_AGENT on its own.
// The rounds run on Codex, the independent review on Claude Code (a second
// opinion from another model family): the round's requests came in OpenAI
// Responses, the review's in Anthropic Messages on the review model, and
// the run's result carries the approved review.
func TestRealStackAgentReviewOnAnotherProvider(t *testing.T) {
	t.Parallel()
	script := fakeopenai.AgentScript{
		// The reviewer's workspace is read-only: there it only reads.
		Command: func(int) string { return "test -e hello.txt || echo hello > hello.txt; cat hello.txt" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return completeArgs("hello.txt holds hello.", "cat hello.txt printed hello")
		},
	}
	e := agentEnv(t, fakeopenai.Script{Rule: script.Rule}, "RALPH_AGENT=codex", "RALPH_AGENT_COMMAND="+agentsBin+"codex",
		"RALPH_REVIEW_AGENT=claude-code", "PATH="+agentsBin+":"+os.Getenv("PATH"), "RALPH_REVIEW=on", "RALPH_REVIEW_MODEL=judge-model")
	w := e.startWorker()
	if log := w.out.String(); !strings.Contains(log, `"reviewAgent":"claude-code"`) || !strings.Contains(log, "agentCLI.claude-code") {
		t.Errorf("the start line does not name the reviewer's CLI:\n%s", tail(log, 2000))
	}
	res, err := e.result(e.start("review-agent", `{"objective":"write hello.txt","verifyCommand":"grep -qx hello hello.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 || res.Review == nil {
		t.Fatalf("result %+v", res)
	}
	want := report.Review{Verdict: report.VerdictApprove, Summary: "The objective is met.", Findings: []string{}, Model: "judge-model",
		SessionID: res.Review.SessionID}
	if !reflect.DeepEqual(*res.Review, want) || want.SessionID == "" {
		t.Errorf("review %+v, want %+v", *res.Review, want)
	}
	var rounds, reviews int
	for _, req := range e.model.Requests() {
		switch req.Wire {
		case fakeopenai.WireResponses:
			rounds++
			if req.OfferedTool("submit_review") != "" || req.Chat.Model != "scripted-model" {
				t.Errorf("request %d on /v1/responses offers submit_review or asks for %q: not the round's", req.Index, req.Chat.Model)
			}
		case fakeopenai.WireMessages:
			if req.OfferedTool("submit_report") != "" || req.Chat.Model != "judge-model" {
				t.Errorf("request %d on /v1/messages offers submit_report or asks for %q: not the review's", req.Index, req.Chat.Model)
			}
			if req.OfferedTool("submit_review") != "" {
				reviews++
			}
		default:
			t.Errorf("request %d came on the %s wire", req.Index, req.Wire)
		}
	}
	t.Logf("%d round requests in OpenAI Responses, %d review requests in Anthropic Messages", rounds, reviews)
	if rounds == 0 || reviews == 0 {
		t.Errorf("%d round requests in OpenAI Responses, %d review requests in Anthropic Messages", rounds, reviews)
	}
}
