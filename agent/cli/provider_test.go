package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

const testKey = "sk-real-provider-key-5e1b9c"

// agentsDir is where scripts/test.sh installs the pinned CLIs.
const agentsDir = "/opt/ralph-agents/node_modules/.bin"

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

func provider(t *testing.T, kind string, srv *fakeopenai.Server) cli.Provider {
	t.Helper()
	found, err := cli.Check(context.Background(), kind, filepath.Join(agentsDir, map[string]string{
		cli.Opencode: "opencode", cli.Codex: "codex", cli.ClaudeCode: "claude"}[kind]))
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model = srv.BaseURL(), testKey, "fake-model"
	cfg.RetryBaseDelay, cfg.RetryMaxDelay = time.Millisecond, 5*time.Millisecond
	return cli.Provider{Dialect: found.Dialect, Command: found.Path, Model: "fake-model", Idle: time.Minute,
		Config: cfg, Upstream: srv.BaseURL(), Key: testKey}
}

func TestOpencodeRoundReportsThroughTheWorker(t *testing.T) { roundReportsThroughTheWorker(t, cli.Opencode) }
func TestCodexRoundReportsThroughTheWorker(t *testing.T)    { roundReportsThroughTheWorker(t, cli.Codex) }

func roundReportsThroughTheWorker(t *testing.T, kind string) {
	script := fakeopenai.AgentScript{
		Command: func(int) string { return "echo hello > hello.txt && cat hello.txt" },
		Report: func(_ int, out string) fakeopenai.ReportArgs {
			return fakeopenai.ReportArgs{Status: "continue", Summary: "Wrote hello.txt.", Evidence: []string{"cat printed " + strings.TrimSpace(out)},
				NextSteps: []string{"Check hello.txt."}}
		},
	}
	srv := fakeopenai.NewServer(fakeopenai.Script{Rule: script.Rule})
	t.Cleanup(srv.Close)
	p := provider(t, kind, srv)
	ws := t.TempDir()
	ev := &events{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := p.Run(ctx, agent.Request{SessionID: "s1", Objective: "Write hello.txt.", Round: 1, MaxRounds: 3, Workspace: ws}, ev)
	for _, e := range ev.kinds(agent.EventAgentOutput) {
		t.Log(e.Output)
	}
	for _, r := range srv.Requests() {
		var names []string
		for _, tl := range r.Chat.Tools {
			names = append(names, tl.Function.Name)
		}
		t.Logf("request %d tools %v", r.Index, names)
		if os.Getenv("DUMP") != "" {
			os.WriteFile(fmt.Sprintf("/tmp/dump-%d.json", r.Index), r.Raw, 0o600)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Status != report.StatusContinue {
		t.Fatalf("report %+v", res.Report)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("hello.txt: %q %v", b, err)
	}
	for _, r := range srv.Requests() {
		t.Logf("request %d tools=%d auth=%q", r.Index, len(r.Chat.Tools), r.Header.Get("Authorization"))
	}
}
