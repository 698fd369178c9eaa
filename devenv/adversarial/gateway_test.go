package adversarial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/devenv/adversarial/scriptcli"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// The CLI attempt's probes (docs/security.md): the real cli.Provider.Run — its
// gateway, report socket and bubblewrap sandbox as uid 65534 — with this
// test binary as the CLI (scriptcli), doing what a model's shell command
// inside a real CLI can do, against the scripted server.

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == scriptcli.Arg {
		os.Exit(scriptcli.Main(os.Args[2:]))
	}
	code := m.Run()
	if cliDir != "" {
		_ = os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

const providerKey = "sk-adversarial-provider-key-9d2f61"

var (
	cliOnce sync.Once
	cliDir  string
	cliErr  error
)

// probeCLI is a command running the probing CLI (scriptcli) in mode: a copy of
// this test binary where the sandbox shows it (its /tmp is its own).
func probeCLI(t *testing.T, mode string) string {
	t.Helper()
	cliOnce.Do(func() {
		if cliDir, cliErr = os.MkdirTemp("/var/tmp", "ralph-scripted-cli-"); cliErr != nil {
			return
		}
		cliErr = copyExecutable(filepath.Join(cliDir, "scripted-cli"))
		if cliErr == nil {
			cliErr = os.Chmod(cliDir, 0o755)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	path := filepath.Join(cliDir, mode)
	script := fmt.Sprintf("#!/bin/sh\nexec %s %s %s \"$@\"\n", filepath.Join(cliDir, "scripted-cli"), scriptcli.Arg, mode)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func copyExecutable(dst string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cliRig is one attempt's provider in a Jail against the scripted server.
type cliRig struct {
	j   *Jail
	srv *fakeopenai.Server
	p   cli.Provider
	mu  sync.Mutex
	ev  []agent.Event
	// seen, when set, is told each event as the session emits it.
	seen func(agent.Event)
}

func newCLIRig(t *testing.T, mode string, rule func(fakeopenai.Request) fakeopenai.Response) *cliRig {
	t.Helper()
	srv := fakeopenai.NewServer(fakeopenai.Script{Rule: rule})
	t.Cleanup(srv.Close)
	j := New(t)
	d, _ := cli.Lookup(cli.Opencode)
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Sandbox = srv.BaseURL(), providerKey, "fake-model", j.Sandbox
	cfg.RetryBaseDelay, cfg.RetryMaxDelay = time.Millisecond, 5*time.Millisecond
	return &cliRig{j: j, srv: srv, p: cli.Provider{Dialect: d, Command: probeCLI(t, mode), Model: "fake-model",
		Idle: time.Minute, Config: cfg, Upstream: srv.BaseURL(), Key: providerKey}}
}

func (r *cliRig) Observe(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, ev)
	if r.seen != nil {
		r.seen(ev)
	}
}

func (r *cliRig) events(k agent.EventKind) []agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []agent.Event
	for _, ev := range r.ev {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func (r *cliRig) run(t *testing.T, req agent.Request) (agent.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req.Workspace, req.MaxRounds = r.j.Dir, 2
	if req.SessionID == "" {
		req.SessionID, req.Objective, req.Round = "s1", "Work.", 1
	}
	res, err := r.p.Run(ctx, req, r)
	for _, e := range r.events(agent.EventAgentOutput) {
		t.Log(e.Output)
	}
	return res, err
}

// answered is a plain streamed or whole answer of 1,000 prompt tokens.
func answered(fakeopenai.Request) fakeopenai.Response {
	return fakeopenai.Response{Content: "working on it", Usage: &openai.Usage{PromptTokens: 1000, CompletionTokens: 10, TotalTokens: 1010}}
}

// rawOf is a request body's top-level fields.
func rawOf(t *testing.T, req fakeopenai.Request) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(req.Raw, &m); err != nil {
		t.Fatalf("request %d: %v", req.Index, err)
	}
	return m
}

// TestForgedApproveIsRefused: a reviewer's command writes approve to the
// report socket; the model never called submit_review. The verdict is
// refused back, recorded as forged_submission, and the review has none.
func TestForgedApproveIsRefused(t *testing.T) {
	r := newCLIRig(t, "forge", answered)
	subject := &agent.ReviewSubject{Report: report.Report{Status: report.StatusComplete, Summary: "Done.", Evidence: []string{"none"}, NextSteps: []string{}}}
	res, err := r.run(t, agent.Request{SessionID: "r1", Objective: "Work.", Round: 1, Review: subject})
	if err == nil || res.Review != nil {
		t.Fatalf("the forged approve counted: review %+v, err %v", res.Review, err)
	}
	forged := r.events(agent.EventForgedSubmission)
	if len(forged) == 0 || !strings.Contains(forged[0].Arguments, "approve") {
		t.Fatalf("forged_submission events %+v, want the approve", forged)
	}
	if calls := r.events(agent.EventToolCall); len(calls) != 0 {
		t.Errorf("the forged submission reached the desk: %+v", calls)
	}
	if !outputHas(r, "forged:", "does not count") {
		t.Error("the CLI was not told why its submission was refused")
	}
}

// TestModelsOwnVerdictCounts: the model's own submit_review call, made
// through the report tool with its arguments (the gateway relayed them in
// pieces of a stream, keys in another order), is accepted.
func TestModelsOwnVerdictCounts(t *testing.T) {
	r := newCLIRig(t, "honest", func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Tools(fakeopenai.CallJSON("ralph_submit_review",
			map[string]any{"findings": []string{}, "summary": "Checked it.", "verdict": "approve"}))
	})
	subject := &agent.ReviewSubject{Report: report.Report{Status: report.StatusComplete, Summary: "Done.", Evidence: []string{"none"}, NextSteps: []string{}}}
	res, err := r.run(t, agent.Request{SessionID: "r1", Objective: "Work.", Round: 1, Review: subject})
	if err != nil {
		t.Fatal(err)
	}
	if res.Review == nil || res.Review.Verdict != report.VerdictApprove || res.Review.Summary != "Checked it." {
		t.Fatalf("review %+v, want the model's approve", res.Review)
	}
}

func outputHas(r *cliRig, prefix, text string) bool {
	for _, e := range r.events(agent.EventAgentOutput) {
		if strings.HasPrefix(e.Output, prefix) && strings.Contains(e.Output, text) {
			return true
		}
	}
	return false
}

// TestParallelRequestsStayUnderTheCap: 40 requests at once under a cap of
// 3 model calls; at most 3 reach the provider, the rest are answered by
// the gateway naming the bound.
func TestParallelRequestsStayUnderTheCap(t *testing.T) {
	r := newCLIRig(t, "flood", answered)
	r.p.Config.MaxModelCalls = 3
	res, _ := r.run(t, agent.Request{TokenBudget: 5000})
	if n := r.srv.RequestCount(); n > 3 {
		t.Fatalf("%d requests reached the provider under a cap of 3 model calls", n)
	}
	if res.Usage.ModelCalls != r.srv.RequestCount() {
		t.Errorf("usage %+v, %d requests forwarded", res.Usage, r.srv.RequestCount())
	}
	if !outputHas(r, "flood", "429") {
		t.Error("no request was refused at the gateway")
	}
}

// TestAbandonedAnswersAreCharged: streamed answers the CLI leaves after
// their first line still count, each with tokens: read to its end
// upstream, or, cut when the attempt ended, charged its estimate (booked
// under usage.estimated).
func TestAbandonedAnswersAreCharged(t *testing.T) {
	r := newCLIRig(t, "abandon", func(req fakeopenai.Request) fakeopenai.Response {
		a := answered(req)
		a.Content, a.ChunkDelay = strings.Repeat("slow words ", 20), 20*time.Millisecond
		return a
	})
	res, _ := r.run(t, agent.Request{})
	served := r.srv.RequestCount()
	if served == 0 {
		t.Fatal("no request reached the provider")
	}
	if res.Usage.ModelCalls != served {
		t.Fatalf("usage %+v after %d abandoned answers", res.Usage, served)
	}
	// Read to its end: the provider's figures; cut: the estimate, apart.
	for _, e := range r.events(agent.EventModelResponse) {
		u := *e.Usage
		reported := u.PromptTokens > 0 && u.CompletionTokens > 0 && u.Estimated == (usage.Counts{})
		estimated := u.PromptTokens == 0 && u.CompletionTokens == 0 &&
			u.Estimated.ModelCalls == 1 && u.Estimated.PromptTokens > 0 && u.Estimated.CompletionTokens > 0
		if !reported && !estimated {
			t.Errorf("an abandoned answer was recorded as %+v", u)
		}
	}
}

// TestRequestFieldsAreBounded: n = 8 is refused at the gateway, naming n;
// max_tokens of 100,000,000 reaches the provider lowered to what the token
// budget can pay.
func TestRequestFieldsAreBounded(t *testing.T) {
	r := newCLIRig(t, "probe", answered)
	_, _ = r.run(t, agent.Request{TokenBudget: 5000})
	reqs := r.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the provider")
	}
	for _, req := range reqs {
		m := rawOf(t, req)
		if n, ok := m["n"]; ok && string(n) != "1" {
			t.Errorf("request %d reached the provider with n=%s", req.Index, n)
		}
		for _, f := range []string{"max_tokens", "max_completion_tokens"} {
			if v, ok := m[f]; ok {
				if n, _ := strconv.Atoi(string(v)); n > 5000 {
					t.Errorf("request %d reached the provider with %s=%s under a token budget of 5000", req.Index, f, v)
				}
			}
		}
	}
	probe := ReadHost(t, filepath.Join(r.j.Dir, "probe.txt"))
	if first, _, _ := strings.Cut(probe, "\n"); !strings.HasPrefix(first, "400 ") || !strings.Contains(first, "n=8") {
		t.Errorf("n=8 was answered %q, want a 400 naming n", first)
	}
}

// TestUpstreamErrorIsRedacted: a provider error that echoes the key
// reaches the CLI without it.
func TestUpstreamErrorIsRedacted(t *testing.T) {
	r := newCLIRig(t, "echo", func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Status(400, "Invalid request for key "+providerKey)
	})
	_, _ = r.run(t, agent.Request{})
	answer := ReadHost(t, filepath.Join(r.j.Dir, "answer.txt"))
	if strings.Contains(answer, providerKey) || !strings.Contains(answer, "Invalid request") {
		t.Fatalf("the CLI read %q", answer)
	}
}

// TestBigBodiesKeepTheWorkerSmall: 12 request bodies of 60 MB at once
// leave the worker's peak memory far below what holding them would take.
func TestBigBodiesKeepTheWorkerSmall(t *testing.T) {
	r := newCLIRig(t, "big", answered)
	// Reset the peak resident size (VmHWM) of this process, the worker.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	before := peakRSS(t)
	_, _ = r.run(t, agent.Request{})
	grew := peakRSS(t) - before
	if grew > 256<<20 {
		t.Fatalf("the worker's peak memory grew by %d MB for 12 bodies of 60 MB", grew>>20)
	}
	for _, req := range r.srv.Requests() {
		if len(req.Raw) > 16<<20 {
			t.Errorf("a body of %d bytes reached the provider", len(req.Raw))
		}
	}
}

func peakRSS(t *testing.T) int {
	for _, line := range strings.Split(ReadHost(t, "/proc/self/status"), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
