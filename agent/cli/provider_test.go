package cli_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

const testKey = "sk-real-provider-key-5e1b9c"

// agentsDir is where scripts/test.sh installs the pinned CLIs
// (devenv/agentclis).
const agentsDir = "/opt/ralph-agents/node_modules/.bin"

var binaries = map[string]string{cli.Opencode: "opencode", cli.Codex: "codex", cli.ClaudeCode: "claude"}

type events struct {
	mu  sync.Mutex
	all []agent.Event
}

func (e *events) Observe(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) kinds(k agent.EventKind) []agent.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []agent.Event
	for _, ev := range e.all {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// rig is one CLI's provider in a real bubblewrap sandbox against the
// scripted server.
type rig struct {
	t         *testing.T
	srv       *fakeopenai.Server
	p         cli.Provider
	workspace string
	served    *servedLog
}

// servedLog counts the answers the scripted server delivered.
type servedLog struct {
	mu sync.Mutex
	n  int
}

func (s *servedLog) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func newRig(t *testing.T, kind string, script fakeopenai.Script, adjust ...func(*sandbox.Config)) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the pinned agent CLIs (scripts/install-agent-clis.sh): make realstack runs it, make unit passes -short")
	}
	served := &servedLog{}
	script.Delivered = func(fakeopenai.Request, fakeopenai.Response) {
		served.mu.Lock()
		served.n++
		served.mu.Unlock()
	}
	srv := fakeopenai.NewServer(script)
	t.Cleanup(srv.Close)
	found, err := cli.Check(context.Background(), kind, filepath.Join(agentsDir, binaries[kind]))
	if err != nil {
		t.Fatal(err)
	}
	root, sessions := t.TempDir(), t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := sandbox.Config{Mode: sandbox.ModeBwrap}
	for _, a := range adjust {
		a(&sc)
	}
	sb, err := sandbox.New(context.Background(), sc, sandbox.Paths{
		WorkspaceRoot: root, SessionDir: sessions, HomesDir: filepath.Join(sessions, "homes"), Environ: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Sandbox = srv.BaseURL(), testKey, "fake-model", sb
	cfg.RetryBaseDelay, cfg.RetryMaxDelay = time.Millisecond, 5*time.Millisecond
	return &rig{t: t, srv: srv, workspace: ws, served: served, p: cli.Provider{Dialect: found.Dialect, Command: found.Path,
		Model: "fake-model", Idle: time.Minute, Config: cfg, Upstream: srv.BaseURL(), Key: testKey}}
}

func (r *rig) run(ctx context.Context, req agent.Request) (agent.Result, *events, error) {
	r.t.Helper()
	req.Workspace, req.MaxRounds = r.r(), 2
	ev := &events{}
	res, err := r.p.Run(ctx, req, ev)
	if err != nil {
		for _, e := range ev.kinds(agent.EventAgentOutput) {
			r.t.Log(e.Output)
		}
	}
	return res, ev, err
}

func (r *rig) r() string { return r.workspace }

// perAnswer is the usage of every scripted answer.
var perAnswer = openai.Usage{PromptTokens: 1000, CompletionTokens: 50, TotalTokens: 1050}

// twoRounds: round 1 writes hello.txt, looks for the provider key in its
// environment and every process's, and asks for reach (a URL on this
// host's own addresses) directly and through the sandbox's proxy; round 2
// claims complete, verified.
func twoRounds(reach []string) fakeopenai.AgentScript {
	return fakeopenai.AgentScript{
		Usage: &perAnswer,
		Command: func(round int) string {
			if round == 1 {
				return "echo hello > hello.txt && id -u && env && cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | sort -u; " + curlEach(reach)
			}
			return "cat hello.txt"
		},
		Report: func(round int, out string) fakeopenai.ReportArgs {
			if round == 1 {
				return fakeopenai.ReportArgs{Status: "continue", Summary: "Wrote hello.txt.", Evidence: []string{"echo hello > hello.txt"},
					NextSteps: []string{"Check hello.txt."}}
			}
			return fakeopenai.ReportArgs{Status: "complete", Summary: "hello.txt holds hello.", Evidence: []string{"cat hello.txt printed " + firstWord(out)},
				NextSteps: []string{}}
		},
	}
}

// curlEach asks for every URL bypassing any proxy, then through the proxy
// the environment names (whatever NO_PROXY says).
func curlEach(urls []string) string {
	var cmds []string
	for _, u := range urls {
		cmds = append(cmds, fmt.Sprintf("curl --noproxy '*' -s -m 5 %q; curl --noproxy '' -s -m 5 %q", u, u))
	}
	return strings.Join(cmds, "; ")
}

// hostURLs are URLs of l on each of this host's own addresses that are
// neither loopback nor link-local: outside the sandbox's network.
func hostURLs(t *testing.T, l *testkit.Listener) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			urls = append(urls, "http://"+net.JoinHostPort(n.IP.String(), strconv.Itoa(l.Port))+"/")
		}
	}
	if len(urls) == 0 {
		t.Fatal("this host has no address but loopback and link-local ones: nothing outside the sandbox to reach")
	}
	return urls
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[len(f)-1]
	}
	return "nothing"
}

func TestTwoRoundsEndVerifiedOpencode(t *testing.T)   { twoRoundsEndVerified(t, cli.Opencode) }
func TestTwoRoundsEndVerifiedCodex(t *testing.T)      { twoRoundsEndVerified(t, cli.Codex) }
func TestTwoRoundsEndVerifiedClaudeCode(t *testing.T) { twoRoundsEndVerified(t, cli.ClaudeCode) }

// twoRoundsEndVerified runs two rounds of kind in the sandbox: the report
// of each arrives through the worker's MCP tool, the second one is
// verified; the usage is what the server served; the CLI never held the
// provider key (its shell's environment and /proc went back to the model,
// so no request body may hold the key) and every request upstream carried
// the key, not the attempt's token; no connection left the sandbox but
// through the gateway and the proxy (which refused this host's addresses:
// the listener there saw none).
func twoRoundsEndVerified(t *testing.T, kind string) {
	host := testkit.Listen(t)
	reach := hostURLs(t, host)
	r := newRig(t, kind, fakeopenai.Script{Rule: twoRounds(reach).Rule})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	first, firstRound, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Write hello.txt.", Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	if first.Report.Status != report.StatusContinue {
		t.Fatalf("round 1 report %+v", first.Report)
	}
	second, ev, err := r.run(ctx, agent.Request{SessionID: "s2", Objective: "Write hello.txt.", Round: 2, Previous: &first.Report,
		VerifyCommand: "grep -qx hello hello.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Report.Status != report.StatusComplete || second.Verification == nil || !second.Verification.Passed() {
		t.Fatalf("round 2: %+v verification %+v", second.Report, second.Verification)
	}
	if n := host.Connections(); n != 0 {
		t.Errorf("the listener on this host's addresses saw %d connections from the sandbox", n)
	}
	// Codex and Claude Code, told not to phone home, open no connection
	// through the proxy but the shell's; opencode still tries the npm
	// registry, refused (a private or unlisted address) or not, it is on
	// record.
	refused := map[string]bool{}
	for _, n := range append(firstRound.kinds(agent.EventNetwork), ev.kinds(agent.EventNetwork)...) {
		t.Logf("proxied: %+v", *n.Network)
		switch {
		case n.Network.Port == host.Port && !n.Network.Allowed:
			refused[n.Network.Host] = true
		case kind != cli.Opencode:
			t.Errorf("%s opened a connection through the proxy: %+v", kind, *n.Network)
		}
	}
	if len(refused) != len(reach) {
		t.Errorf("the proxy refused the shell's requests for %v, want one for each of %v", refused, reach)
	}
	if len(ev.kinds(agent.EventVerifyResult)) != 1 {
		t.Errorf("verify results: %+v", ev.kinds(agent.EventVerifyResult))
	}
	b, err := os.ReadFile(filepath.Join(r.workspace, "hello.txt"))
	if err != nil || string(b) != "hello\n" {
		t.Fatalf("hello.txt: %q %v", b, err)
	}
	got := first.Usage.Add(second.Usage)
	n := r.served.count()
	want := usage.Usage{ModelCalls: n, ToolCalls: 2, PromptTokens: n * perAnswer.PromptTokens, CompletionTokens: n * perAnswer.CompletionTokens}
	if got != want {
		t.Errorf("usage %+v, want %+v (%d answers served)", got, want, n)
	}
	sawShellOutput := false
	for _, req := range r.srv.Requests() {
		if h := req.Header.Get("Authorization") + req.Header.Get("x-api-key"); !strings.Contains(h, testKey) {
			t.Errorf("request %d reached the server without the provider key: %q", req.Index, h)
		}
		if strings.Contains(string(req.Raw), testKey) {
			t.Errorf("request %d body holds the provider key", req.Index)
		}
		sawShellOutput = sawShellOutput || strings.Contains(string(req.Raw), "ralph-attempt-")
	}
	if !sawShellOutput {
		t.Error("no request carried the shell's environment (the attempt's token): the key check proved nothing")
	}
}

func TestLoopbackMirrorKeepsTheGatewayOpencode(t *testing.T) {
	loopbackMirrorKeepsTheGateway(t, cli.Opencode)
}
func TestLoopbackMirrorKeepsTheGatewayCodex(t *testing.T) {
	loopbackMirrorKeepsTheGateway(t, cli.Codex)
}
func TestLoopbackMirrorKeepsTheGatewayClaudeCode(t *testing.T) {
	loopbackMirrorKeepsTheGateway(t, cli.ClaudeCode)
}

// loopbackMirrorKeepsTheGateway: RALPH_SANDBOX_ALLOW_HOSTS names a mirror on
// the host's 127.0.0.1, so the sandbox sends 127.0.0.1 to the proxy; the
// CLI must still reach its gateway (a loopback address inside the sandbox)
// directly, and its shell the mirror, with the environment as it is set.
func loopbackMirrorKeepsTheGateway(t *testing.T, kind string) {
	mirror := testkit.Listen(t)
	dest := "127.0.0.1:" + strconv.Itoa(mirror.Port)
	script := fakeopenai.AgentScript{
		Usage:   &perAnswer,
		Command: func(int) string { return "curl -sS -m 10 http://" + dest + "/mirror" },
		Report: func(_ int, out string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "Asked the mirror.", Evidence: []string{"curl printed " + firstWord(out)},
				NextSteps: []string{"Use the mirror."}}
		},
	}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule}, func(c *sandbox.Config) { c.AllowHosts = []string{dest} })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, _, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Ask the mirror.", Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"curl printed host-listener"}; !slices.Equal(res.Report.Evidence, want) {
		t.Errorf("evidence %q, want %q (the shell's curl through the proxy to the mirror)", res.Report.Evidence, want)
	}
	if mirror.Connections() == 0 {
		t.Error("the mirror on the host's loopback saw no connection")
	}
}

func TestCancelDuringACommandOpencode(t *testing.T)   { cancelDuringACommand(t, cli.Opencode) }
func TestCancelDuringACommandCodex(t *testing.T)      { cancelDuringACommand(t, cli.Codex) }
func TestCancelDuringACommandClaudeCode(t *testing.T) { cancelDuringACommand(t, cli.ClaudeCode) }

// cancelDuringACommand cancels the round while the CLI's shell runs a
// long command: the round ends cancelled, and neither the CLI nor the
// command (nor anything working in the workspace) is left running.
func cancelDuringACommand(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{
		Command: func(int) string { return "touch started; sleep 3037; echo never" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "blocked", Summary: "x", Evidence: []string{}, NextSteps: []string{}, Blocker: "x"}
		},
	}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(filepath.Join(r.workspace, "started")); err == nil {
				time.Sleep(200 * time.Millisecond) // the sleep is running
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	limit := time.AfterFunc(3*time.Minute, cancel)
	defer limit.Stop()
	_, _, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Sleep.", Round: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("round ended with %v, want a cancel", err)
	}
	if _, err := os.Stat(filepath.Join(r.workspace, "started")); err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	if left := testkit.ProcessesIn(r.workspace, "sleep 3037"); len(left) > 0 {
		t.Fatalf("left running after the cancel: %v", left)
	}
}

func TestModelCallCapForcesTheHandoffCodex(t *testing.T) {
	modelCallCapForcesTheHandoff(t, cli.Codex, 0)
}
func TestModelCallCapForcesTheHandoffClaudeCode(t *testing.T) {
	modelCallCapForcesTheHandoff(t, cli.ClaudeCode, 0)
}
func TestModelCallCapForcesTheHandoffOpencode(t *testing.T) {
	modelCallCapForcesTheHandoff(t, cli.Opencode, 1)
}

// modelCallCapForcesTheHandoff: with two model calls allowed (plus the
// CLI's own extra ones, opencode's title request), the gateway forwards the
// second with only the report tool and the hand-off notice; the model then
// can only report, and the round ends with that report.
func modelCallCapForcesTheHandoff(t *testing.T, kind string, extra int) {
	script := fakeopenai.AgentScript{
		Command: func(int) string { return "echo step" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "Handed off.", Evidence: []string{"echo step"}, NextSteps: []string{"Go on."}}
		},
	}
	r := newRig(t, kind, fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.OfferedTool("submit_report") != "" && len(req.Chat.Tools) > 1 && strings.Contains(req.LastToolOutput(), "step") {
			// Before the hand-off the model would go on working.
			return fakeopenai.Tools(fakeopenai.ShellCall(req.ShellTool(), "echo more"))
		}
		return script.Rule(req)
	}})
	r.p.Config.MaxModelCalls = 2 + extra
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, ev, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Summary != "Handed off." {
		t.Fatalf("report %+v", res.Report)
	}
	reqs := r.srv.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Chat.Tools) != 1 || !strings.HasSuffix(last.Chat.Tools[0].Function.Name, "submit_report") {
		t.Errorf("the hand-off request offered %d tools, want only the report tool", len(last.Chat.Tools))
	}
	if !strings.Contains(string(last.Raw), "this is the last model call of this round") {
		t.Error("the hand-off request does not carry the notice")
	}
	if h := ev.kinds(agent.EventHandoff); len(h) != 1 || h[0].Bound != agent.BoundModelCalls {
		t.Errorf("handoff events %+v", h)
	}
}

func TestRefusedKeyEndsTheRoundOpencode(t *testing.T)   { refusedKeyEndsTheRound(t, cli.Opencode) }
func TestRefusedKeyEndsTheRoundCodex(t *testing.T)      { refusedKeyEndsTheRound(t, cli.Codex) }
func TestRefusedKeyEndsTheRoundClaudeCode(t *testing.T) { refusedKeyEndsTheRound(t, cli.ClaudeCode) }

// refusedKeyEndsTheRound: a 401 from the provider ends the round as an
// ordinary child failure at once (the CLI would retry it), naming it.
func refusedKeyEndsTheRound(t *testing.T, kind string) {
	r := newRig(t, kind, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Status(401, "Incorrect API key provided")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1})
	if !agent.IsChildFailure(err) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("round ended with %v, want a child failure naming the 401", err)
	}
	// One request (opencode: the title request, or the round's first, or
	// both when they race), each once: a refusal is not retried.
	bodies := map[string]bool{}
	for _, req := range r.srv.Requests() {
		bodies[string(req.Raw)] = true
	}
	if n := r.srv.RequestCount(); n == 0 || n != len(bodies) {
		t.Errorf("%d requests reached the provider, %d of them different; want each once", n, len(bodies))
	}
}

// roundRequests are the requests of the round's conversation: those that
// offer the report tool (not opencode's title request, sent alongside).
func roundRequests(reqs []fakeopenai.Request) []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, req := range reqs {
		if req.OfferedTool("submit_report", "submit_review") != "" {
			out = append(out, req)
		}
	}
	return out
}

func TestLongRetryAfterDefersTheRoundOpencode(t *testing.T) {
	longRetryAfterDefersTheRound(t, cli.Opencode)
}
func TestLongRetryAfterDefersTheRoundCodex(t *testing.T) { longRetryAfterDefersTheRound(t, cli.Codex) }
func TestLongRetryAfterDefersTheRoundClaudeCode(t *testing.T) {
	longRetryAfterDefersTheRound(t, cli.ClaudeCode)
}

// longRetryAfterDefersTheRound: a 429 asking for longer than the session
// may wait defers the round with the provider's delay.
func longRetryAfterDefersTheRound(t *testing.T, kind string) {
	r := newRig(t, kind, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.RateLimited("120")
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1, Deferrable: true})
	d, ok := agent.AsDeferred(err)
	if !ok || d.Reason != agent.DeferRateLimited || d.RetryAfter != 120*time.Second {
		t.Fatalf("round ended with %v, want a deferral for 120 s", err)
	}
}

func TestLongRetryAfterIsWaitedOutCodex(t *testing.T) { longRetryAfterIsWaitedOut(t, cli.Codex) }
func TestLongRetryAfterIsWaitedOutClaudeCode(t *testing.T) {
	longRetryAfterIsWaitedOut(t, cli.ClaudeCode)
}

// longRetryAfterIsWaitedOut: in a round that may not be deferred (a
// reviewer's, say) a 429 asking for longer than the session may wait is
// retried after MaxRetryAfter, as the builtin session does, and the round
// ends with its report.
func longRetryAfterIsWaitedOut(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{Report: func(int, string) fakeopenai.ReportArgs {
		return fakeopenai.ReportArgs{Status: "continue", Summary: "Waited it out.", Evidence: []string{"none"}, NextSteps: []string{"Go on."}}
	}}
	r := newRig(t, kind, fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Index < 2 {
			return fakeopenai.RateLimited("120")
		}
		return script.Rule(req)
	}})
	r.p.Config.MaxRetryAfter = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1})
	if err != nil {
		t.Fatalf("round ended with %v, want its report after the retries", err)
	}
	if res.Report.Summary != "Waited it out." {
		t.Fatalf("report %+v", res.Report)
	}
	if n := r.srv.RequestCount(); n < 3 {
		t.Errorf("%d requests reached the provider, want the two refused ones and at least one more", n)
	}
}

func TestTokenBudgetForcesTheHandoffOpencode(t *testing.T) {
	tokenBudgetForcesTheHandoff(t, cli.Opencode)
}
func TestTokenBudgetForcesTheHandoffCodex(t *testing.T) { tokenBudgetForcesTheHandoff(t, cli.Codex) }
func TestTokenBudgetForcesTheHandoffClaudeCode(t *testing.T) {
	tokenBudgetForcesTheHandoff(t, cli.ClaudeCode)
}

// tokenBudgetForcesTheHandoff: the first answer spends most of the run's
// token budget; the next request would pass what is left, so the gateway
// forwards it with only the report tool and the notice naming the budget.
func tokenBudgetForcesTheHandoff(t *testing.T, kind string) {
	big := openai.Usage{PromptTokens: 152000, CompletionTokens: 10, TotalTokens: 152010}
	script := fakeopenai.AgentScript{Usage: &big,
		Command: func(int) string { return "echo step" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "Out of tokens.", Evidence: []string{"echo step"}, NextSteps: []string{"Go on."}}
		},
	}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, ev, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1, TokenBudget: 160000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Summary != "Out of tokens." {
		t.Fatalf("report %+v", res.Report)
	}
	if h := ev.kinds(agent.EventHandoff); len(h) != 1 || h[0].Bound != agent.BoundTokenBudget {
		t.Fatalf("handoff events %+v", h)
	}
	reqs := r.srv.Requests()
	if last := reqs[len(reqs)-1]; len(last.Chat.Tools) != 1 || !strings.Contains(string(last.Raw), "token budget") {
		t.Errorf("the hand-off request offered %d tools (want only the report tool) or lacks the notice", len(last.Chat.Tools))
	}
}

func TestProtectedPathRestoredOpencode(t *testing.T)   { protectedPathRestored(t, cli.Opencode) }
func TestProtectedPathRestoredCodex(t *testing.T)      { protectedPathRestored(t, cli.Codex) }
func TestProtectedPathRestoredClaudeCode(t *testing.T) { protectedPathRestored(t, cli.ClaudeCode) }

// protectedPathRestored: the CLI's shell creates a file a protected
// pattern covers (an existing protected file is read-only in the sandbox);
// its report is refused with the builtin session's refusal and the file
// removed; the report that follows is accepted and the round says what it
// restored.
func protectedPathRestored(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{
		Command: func(int) string { return "echo planted > tests.txt" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "Changed the tests.", Evidence: []string{"echo"}, NextSteps: []string{"Go on."}}
		},
	}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule})
	tests := filepath.Join(r.workspace, "tests.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1, ProtectedPaths: [][]string{{"tests.txt"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tests); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tests.txt is still there after the round: %v", err)
	}
	if len(res.Restored) != 1 || res.Restored[0] != "tests.txt" {
		t.Errorf("restored %v", res.Restored)
	}
	refused := false
	for _, req := range r.srv.Requests() {
		refused = refused || strings.Contains(req.LastToolOutput(), "tests.txt")
	}
	if !refused {
		t.Error("the model never read the refusal naming tests.txt")
	}
}

func TestReviewThroughTheCLIOpencode(t *testing.T)   { reviewThroughTheCLI(t, cli.Opencode) }
func TestReviewThroughTheCLICodex(t *testing.T)      { reviewThroughTheCLI(t, cli.Codex) }
func TestReviewThroughTheCLIClaudeCode(t *testing.T) { reviewThroughTheCLI(t, cli.ClaudeCode) }

// reviewThroughTheCLI: a reviewer session on a CLI reads the workspace
// with its shell (read-only there) and hands its verdict through
// submit_review, checked by the builtin reviewer's rules.
func reviewThroughTheCLI(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{Command: func(int) string { return "cat hello.txt; touch changed.txt" }}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule})
	if err := os.WriteFile(filepath.Join(r.workspace, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	subject := &agent.ReviewSubject{Report: report.Report{Status: report.StatusComplete, Summary: "hello.txt holds hello.",
		Evidence: []string{"cat hello.txt"}, NextSteps: []string{}}}
	res, _, err := r.run(ctx, agent.Request{SessionID: "r1", Objective: "Write hello.txt.", Round: 1, Review: subject})
	if err != nil {
		t.Fatal(err)
	}
	if res.Review == nil || res.Review.Verdict != report.VerdictApprove {
		t.Fatalf("review %+v", res.Review)
	}
	if _, err := os.Stat(filepath.Join(r.workspace, "changed.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reviewer's shell changed the workspace: %v", err)
	}
}

func TestPlanThroughTheCLIOpencode(t *testing.T)   { planThroughTheCLI(t, cli.Opencode) }
func TestPlanThroughTheCLICodex(t *testing.T)      { planThroughTheCLI(t, cli.Codex) }
func TestPlanThroughTheCLIClaudeCode(t *testing.T) { planThroughTheCLI(t, cli.ClaudeCode) }

// planThroughTheCLI: a campaign planner's session on a CLI reads the
// checkout with its shell (read-only there) and hands its plan through
// submit_plan, checked by the builtin planner's rules: a cycle goes back
// with the rule, the fixed plan ends the session.
func planThroughTheCLI(t *testing.T, kind string) {
	tries := 0
	script := fakeopenai.AgentScript{Command: func(int) string { return "cat hello.txt; touch changed.txt" },
		Plan: func(string) fakeopenai.PlanArgs {
			tries++
			p := fakeopenai.PlanArgs{Status: "tasks", Summary: "Greet twice.", Tasks: []fakeopenai.PlanTask{
				{ID: "hello", Objective: "Print hello."}, {ID: "bye", Objective: "Print bye.", DependsOn: []string{"hello"}}}}
			if tries == 1 {
				p.Tasks[0].DependsOn = []string{"bye"}
			}
			return p
		}}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule})
	if err := os.WriteFile(filepath.Join(r.workspace, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	subject := &agent.PlanSubject{Wave: 1, Head: "abc", Rules: plan.Rules{MaxTasks: 5}}
	res, _, err := r.run(ctx, agent.Request{SessionID: "p1", Objective: "Greet.", Round: 1, Plan: subject})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan == nil || len(res.Plan.Tasks) != 2 || tries != 2 {
		t.Fatalf("plan %+v after %d submissions", res.Plan, tries)
	}
	refused := false
	for _, req := range r.srv.Requests() {
		refused = refused || strings.Contains(req.LastToolOutput(), `rule \"no cycle\"`) || strings.Contains(req.LastToolOutput(), `rule "no cycle"`)
	}
	if !refused {
		t.Error("the model never read the refusal naming the cycle")
	}
	if _, err := os.Stat(filepath.Join(r.workspace, "changed.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the planner's shell changed the checkout: %v", err)
	}
}

func TestIdleCLIGetsOneContinuationOpencode(t *testing.T) {
	idleCLIGetsOneContinuation(t, cli.Opencode)
}
func TestIdleCLIGetsOneContinuationCodex(t *testing.T) { idleCLIGetsOneContinuation(t, cli.Codex) }
func TestIdleCLIGetsOneContinuationClaudeCode(t *testing.T) {
	idleCLIGetsOneContinuation(t, cli.ClaudeCode)
}

// idleCLIGetsOneContinuation: a CLI whose first model call hangs is
// silent; after the idle bound it is stopped and continued once in the
// same session, and the continuation's report ends the round.
func idleCLIGetsOneContinuation(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{Report: func(int, string) fakeopenai.ReportArgs {
		return fakeopenai.ReportArgs{Status: "continue", Summary: "Reported after the continuation.", Evidence: []string{"none"}, NextSteps: []string{"Go on."}}
	}}
	var hung atomic.Bool
	r := newRig(t, kind, fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.OfferedTool("submit_report") != "" && hung.CompareAndSwap(false, true) {
			return fakeopenai.Hang()
		}
		return script.Rule(req)
	}})
	// Longer than the CLI takes to start (opencode: seconds).
	r.p.Idle = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, ev, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Summary != "Reported after the continuation." {
		t.Fatalf("report %+v", res.Report)
	}
	exits := ev.kinds(agent.EventAgentExit)
	if len(exits) != 1 || !strings.Contains(exits[0].Output, "silent for 10s") {
		t.Errorf("agent exits %+v, want one idle stop", exits)
	}
	round := roundRequests(r.srv.Requests())
	if !strings.Contains(string(round[len(round)-1].Raw), "You stopped without a valid report") {
		t.Error("the report came without the continuation's prompt")
	}
}

func TestRefusedCompleteThroughTheCLIOpencode(t *testing.T) {
	refusedCompleteThroughTheCLI(t, cli.Opencode)
}
func TestRefusedCompleteThroughTheCLICodex(t *testing.T) { refusedCompleteThroughTheCLI(t, cli.Codex) }
func TestRefusedCompleteThroughTheCLIClaudeCode(t *testing.T) {
	refusedCompleteThroughTheCLI(t, cli.ClaudeCode)
}

// refusedCompleteThroughTheCLI: a complete report whose verify command
// fails is refused with the builtin session's refusal (not a repair); the
// CLI's next report, continue, is accepted.
func refusedCompleteThroughTheCLI(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{Report: func(_ int, last string) fakeopenai.ReportArgs {
		if strings.Contains(last, "Completion refused") {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "The check fails.", Evidence: []string{"verify exited 3"}, NextSteps: []string{"Fix it."}}
		}
		return fakeopenai.ReportArgs{Status: "complete", Summary: "Done.", Evidence: []string{"none"}, NextSteps: []string{}}
	}}
	r := newRig(t, kind, fakeopenai.Script{Rule: script.Rule})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, ev, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1, VerifyCommand: "echo not yet; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Status != report.StatusContinue || res.Verification != nil {
		t.Fatalf("report %+v verification %+v", res.Report, res.Verification)
	}
	if v := ev.kinds(agent.EventVerifyResult); len(v) != 1 || *v[0].ExitCode != 3 {
		t.Errorf("verify results %+v", v)
	}
}

func TestTimeBoundForcesTheHandoffOpencode(t *testing.T) { timeBoundForcesTheHandoff(t, cli.Opencode) }
func TestTimeBoundForcesTheHandoffCodex(t *testing.T)    { timeBoundForcesTheHandoff(t, cli.Codex) }
func TestTimeBoundForcesTheHandoffClaudeCode(t *testing.T) {
	timeBoundForcesTheHandoff(t, cli.ClaudeCode)
}

// timeBoundForcesTheHandoff: the model works (short sleeps) until the
// round's time bound passes; the gateway forwards the request after it
// with only the report tool and the notice naming the round's time, and
// the report then ends the round before its deadline.
func timeBoundForcesTheHandoff(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{Report: func(int, string) fakeopenai.ReportArgs {
		return fakeopenai.ReportArgs{Status: "continue", Summary: "Out of time.", Evidence: []string{"sleep"}, NextSteps: []string{"Go on."}}
	}}
	// Up to twice MinHandoffReserve the bound keeps half the round for the
	// hand-off: it passes half-way from the session's start (a little after
	// now) to the deadline.
	span := 30 * time.Second
	deadline := time.Now().Add(span)
	boundAt := deadline.Add(-span / 2)
	r := newRig(t, kind, fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.OfferedTool("submit_report") != "" && len(req.Chat.Tools) > 1 {
			// Before the hand-off the model would go on working.
			wait := min(time.Until(boundAt)+time.Second, 5*time.Second)
			cmd := fmt.Sprintf("sleep %.1f; echo step", max(wait.Seconds(), 0.1))
			return fakeopenai.Tools(fakeopenai.ShellCall(req.ShellTool(), cmd))
		}
		return script.Rule(req)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, ev, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Summary != "Out of time." {
		t.Fatalf("report %+v", res.Report)
	}
	if h := ev.kinds(agent.EventHandoff); len(h) != 1 || h[0].Bound != agent.BoundRoundTime {
		t.Fatalf("handoff events %+v", h)
	}
	round := roundRequests(r.srv.Requests())
	if len(round[0].Chat.Tools) == 1 {
		t.Error("the round's first request already came after the time bound: the CLI worked not at all")
	}
	last := round[len(round)-1]
	if len(last.Chat.Tools) != 1 || !strings.Contains(string(last.Raw), "the time of this round is nearly spent") {
		t.Errorf("the hand-off request offered %d tools (want only the report tool) or lacks the notice", len(last.Chat.Tools))
	}
}

func TestFallbackModelTakesOverOpencode(t *testing.T)   { fallbackModelTakesOver(t, cli.Opencode) }
func TestFallbackModelTakesOverCodex(t *testing.T)      { fallbackModelTakesOver(t, cli.Codex) }
func TestFallbackModelTakesOverClaudeCode(t *testing.T) { fallbackModelTakesOver(t, cli.ClaudeCode) }

// fallbackModelTakesOver: the primary model only answers 429 and 503
// (without a wait worth deferring for); once its retries are spent the
// gateway moves the same conversation to the fallback model, and every
// later request goes there, as in the builtin session. The round ends with
// the fallback's report and the usage is what was served.
func fallbackModelTakesOver(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{Usage: &perAnswer, Command: func(int) string { return "echo step" },
		Report: func(int, string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "Reported by the fallback.", Evidence: []string{"echo step"}, NextSteps: []string{"Go on."}}
		}}
	r := newRig(t, kind, fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		switch {
		case req.Chat.Model != "fake-model":
			return script.Rule(req)
		case req.Index%2 == 0:
			return fakeopenai.RateLimited("0")
		}
		return fakeopenai.Unavailable("")
	}})
	r.p.Config.FallbackModels = []string{"fallback-model"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, ev, err := r.run(ctx, agent.Request{SessionID: "s1", Objective: "Work.", Round: 1, Deferrable: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Summary != "Reported by the fallback." || res.Model != "fallback-model" {
		t.Fatalf("report %+v by %q", res.Report, res.Model)
	}
	if f := ev.kinds(agent.EventModelFallback); len(f) != 1 || f[0].Model != "fallback-model" {
		t.Errorf("fallback events %+v, want one to fallback-model", f)
	}
	// opencode's title request, sent alongside, may be the one that spends
	// the primary's retries: the round's own requests say what came after.
	all, round := modelsAsked(r.srv.Requests()), modelsAsked(roundRequests(r.srv.Requests()))
	moved := slices.Index(round, "fallback-model")
	if slices.Index(all, "fallback-model") < agent.DefaultTransientRetries+1 || moved < 0 ||
		slices.ContainsFunc(round[moved:], func(m string) bool { return m != "fallback-model" }) {
		t.Errorf("models asked, in order: %v (by the round's requests %v); want the primary's retries spent, then only the fallback", all, round)
	}
	n := r.served.count()
	want := usage.Usage{ModelCalls: n, ToolCalls: 1, PromptTokens: n * perAnswer.PromptTokens, CompletionTokens: n * perAnswer.CompletionTokens}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v (%d answers served)", res.Usage, want, n)
	}
}

func modelsAsked(reqs []fakeopenai.Request) []string {
	var models []string
	for _, req := range reqs {
		models = append(models, req.Chat.Model)
	}
	return models
}
