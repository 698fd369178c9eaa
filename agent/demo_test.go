package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// The demo script must drive the real agent to a two-round completion.
func TestDemoScriptPlaysTwoRounds(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.DemoScript())
	defer s.Close()
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.CallTimeout = s.BaseURL(), "demo", 20*time.Second
	ws := t.TempDir()
	req := agent.Request{SessionID: "demo-1", Objective: "Write a greeting script with a test.", Round: 1, MaxRounds: 3, Workspace: ws}

	first, err := agent.RunSession(context.Background(), cfg, req, nil)
	if err != nil {
		t.Fatalf("round 1: %v", err)
	}
	if first.Report.Status != "continue" || len(first.Report.Evidence) == 0 {
		t.Fatalf("round 1 report = %+v, want continue with passing-test evidence", first.Report)
	}
	for _, name := range []string{"greet.sh", "greet_test.sh"} {
		if _, err := os.Stat(filepath.Join(ws, name)); err != nil {
			t.Errorf("round 1 left no %s: %v", name, err)
		}
	}

	req.Round, req.SessionID, req.Previous = 2, "demo-2", &first.Report
	second, err := agent.RunSession(context.Background(), cfg, req, nil)
	if err != nil {
		t.Fatalf("round 2: %v", err)
	}
	if second.Report.Status != "complete" || second.Usage.ModelCalls != 4 {
		t.Fatalf("round 2 = %+v, want complete after 4 model calls", second)
	}
	reqs := s.Requests()
	round2 := reqs[len(reqs)-1]
	if !strings.Contains(round2.Chat.Messages[1].Content, "Round 2 of 3") || !strings.Contains(round2.Chat.Messages[1].Content, first.Report.Summary) {
		t.Errorf("round 2 prompt = %q", round2.Chat.Messages[1].Content)
	}
}
