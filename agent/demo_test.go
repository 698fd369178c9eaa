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
	"github.com/ralph-temporal/ralph/report"
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

// The campaign demo's task play: a first go adds its line after the first
// line; a later go on a file with conflict markers, whose previous report
// names it, keeps both sides, and both pass the verify command.
func TestDemoScriptPlaysCampaignTasks(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.DemoScript())
	defer s.Close()
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.CallTimeout = s.BaseURL(), "demo", 20*time.Second
	ws := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("check.sh", "grep -q '^<<<<<<<' greetings.txt && exit 1; echo PASS\n")
	write("greetings.txt", "# Greetings\n")
	req := agent.Request{SessionID: "c-1", Objective: `In greetings.txt, add the line "Bonjour" after the first line.`,
		Round: 1, MaxRounds: 3, Workspace: ws, VerifyCommand: "bash check.sh"}
	first, err := agent.RunSession(context.Background(), cfg, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "greetings.txt")); string(got) != "# Greetings\nBonjour\n" || first.Report.Status != "complete" {
		t.Fatalf("first go: file %q, report %+v", got, first.Report)
	}

	write("greetings.txt", "# Greetings\n<<<<<<< HEAD\nBonjour\n=======\nHello\n>>>>>>> integration\n")
	req.SessionID, req.Previous = "c-2", &report.Report{Status: report.StatusContinue,
		Summary:   "The merge into the integration branch conflicted in greetings.txt.",
		Evidence:  []string{},
		NextSteps: []string{"Resolve the conflict markers in greetings.txt keeping the task's intent."}}
	second, err := agent.RunSession(context.Background(), cfg, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(ws, "greetings.txt"))
	if string(got) != "# Greetings\nBonjour\nHello\n" || second.Report.Status != "complete" ||
		!strings.Contains(second.Report.Summary, "previous report named greetings.txt") {
		t.Fatalf("second go: file %q, report %+v", got, second.Report)
	}
}
