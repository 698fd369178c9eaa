package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// untilReportOnly runs work until only submit_report is offered, then
// submits a continue report.
func untilReportOnly(work func(r fakeopenai.Request) fakeopenai.Response) fakeopenai.Script {
	return fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Chat.Tools) == 1 {
			return submit(validContinue)
		}
		return work(r)
	}}
}

func wantHandoff(t *testing.T, h *harness, res agent.Result, err error, bound string, notice ...string) fakeopenai.Request {
	t.Helper()
	if err != nil || res.Report.Status != "continue" || res.ForcedBound != bound {
		t.Fatalf("result = %+v, %v; want the hand-off report forced by %s", res, err, bound)
	}
	hs := h.events.ofKind(agent.EventHandoff)
	if len(hs) != 1 || hs[0].Bound != bound {
		t.Fatalf("handoff events = %+v, want one for %s", hs, bound)
	}
	reqs := h.requests()
	last := reqs[len(reqs)-1]
	if got := offeredTools(last); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("hand-off request offers %v", got)
	}
	var text string
	for _, m := range last.Chat.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			text = m.Content
		}
	}
	for _, want := range append(notice, "Hand off now: ", "Remaining: model calls: ") {
		if !strings.Contains(text, want) {
			t.Errorf("hand-off notice lacks %q:\n%s", want, text)
		}
	}
	return last
}

func TestRoundTimeForcesHandoffAndStopsTheRunningCommand(t *testing.T) {
	h := newHarness(t, untilReportOnly(func(fakeopenai.Request) fakeopenai.Response {
		return call("run_command", map[string]any{"command": "sleep 30"})
	}))
	// A 6 s round keeps half of it (3 s) for the hand-off.
	h.req.Deadline = time.Now().Add(6 * time.Second)
	res, err := h.run()
	last := wantHandoff(t, h, res, err, agent.BoundRoundTime, "the time of this round is nearly spent", "round time: ")
	tm := toolMessages(last)
	if len(tm) != 1 || !strings.Contains(tm[0].Content, "run_command was stopped: the time for work in this round is spent") {
		t.Errorf("tool messages = %+v, want the stopped command", tm)
	}
}

func TestRunTimeBudgetForcesHandoff(t *testing.T) {
	h := newHarness(t, untilReportOnly(func(r fakeopenai.Request) fakeopenai.Response {
		return call("run_command", map[string]any{"command": fmt.Sprintf("sleep 0.2; echo %d", r.Index)})
	}))
	h.req.RunDeadline = time.Now().Add(6 * time.Second)
	res, err := h.run()
	wantHandoff(t, h, res, err, agent.BoundRunTime, "the run's time budget is nearly spent", "run time: ")
	if n := len(h.requests()); n < 2 {
		t.Errorf("%d requests: the work should have gone on until the hand-off point", n)
	}
}

func TestTokenBudgetForcesHandoff(t *testing.T) {
	// Each call costs 3010 tokens (about the size of the first request with
	// every tool's definition); the answer reserve is the output limit.
	h := newHarness(t, untilReportOnly(func(r fakeopenai.Request) fakeopenai.Response {
		return withUsage(call("run_command", map[string]any{"command": fmt.Sprintf("echo %d", r.Index)}), 3000)
	}))
	h.req.TokenBudget = 9000
	h.cfg.MaxOutputTokens = 100
	res, err := h.run()
	last := wantHandoff(t, h, res, err, agent.BoundTokenBudget, "the next request would pass what is left of the run's token budget", "run token budget: 2980 tokens")
	// After two calls 2980 tokens are left, fewer than the full hand-off
	// request: the compacted one is sent instead.
	if !isCompacted(last) {
		t.Errorf("the hand-off request over the remaining budget is not the compacted one: %+v", last.Chat.Messages)
	}
	for _, r := range h.requests() {
		if !strings.Contains(string(r.Raw), `"max_tokens":100`) {
			t.Errorf("request %d lacks max_tokens 100", r.Index)
		}
	}
}

func TestNoValidReportAfterForcedHandoffIsChildFailure(t *testing.T) {
	bad := validContinue
	bad.NextSteps = nil
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Chat.Tools) == 1 {
			return submit(bad)
		}
		return call("run_command", map[string]any{"command": "echo same"})
	}})
	_, err := h.run()
	wantChildFailure(t, err, "still invalid after 3 repair(s)")
	if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundLoop {
		t.Errorf("handoff events = %+v", hs)
	}
}

func TestRemindersCountOnlyConsecutiveTextAnswers(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		switch {
		case r.Index >= 12:
			return submit(validContinue)
		case r.Index%2 == 0:
			return fakeopenai.Text("Let me think about the next step.")
		default:
			return call("run_command", map[string]any{"command": fmt.Sprintf("echo %d", r.Index)})
		}
	}})
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	reqs := h.requests()
	if len(reqs) != 13 {
		t.Fatalf("%d requests, want 13", len(reqs))
	}
	for _, r := range reqs {
		if got := offeredTools(r); !slices.Equal(got, allTools) {
			t.Errorf("request %d offers %v, want every tool", r.Index, got)
		}
	}
	for _, i := range []int{1, 7} {
		if m := lastMessage(reqs[i]); m.Role != openai.ChatMessageRoleUser || !strings.Contains(m.Content, "Keep working with the tools") {
			t.Errorf("request %d ends with %+v, want a plain reminder", i, m)
		}
	}
}

func TestCutOffAnswerIsNotExecuted(t *testing.T) {
	cut := call("write_file", map[string]string{"path": "big.txt", "content": "partial"})
	cut.ToolCalls[0].Arguments = `{"path": "big.txt", "content": "partial`
	cut.FinishReason = openai.FinishReasonLength
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		cut,
		call("write_file", map[string]string{"path": "big.txt", "content": "whole"}),
		submit(validContinue),
	}})
	h.cfg.MaxOutputTokens = 64
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	reqs := h.requests()
	second := reqs[1]
	tm := toolMessages(second)
	if len(tm) != 1 || !strings.Contains(tm[0].Content, "not run: the answer that made this call was cut off") {
		t.Errorf("tool messages = %+v", tm)
	}
	if m := lastMessage(second); m.Role != openai.ChatMessageRoleUser || !strings.Contains(m.Content, "cut off by the output-token limit (64 tokens)") {
		t.Errorf("request 2 ends with %+v, want the cut-off notice", m)
	}
	if got := offeredTools(second); !slices.Equal(got, allTools) {
		t.Errorf("after a cut-off answer request 2 offers %v, want every tool (room to retry)", got)
	}
	data, err := os.ReadFile(filepath.Join(h.req.Workspace, "big.txt"))
	if err != nil || string(data) != "whole" {
		t.Errorf("big.txt = %q, %v; the cut-off call must never have run", data, err)
	}
}

func TestEchoReasoningOff(t *testing.T) {
	first := call("list_files", map[string]string{})
	first.Reasoning = "REASONING-MARKER-3f1"
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{first, submit(validContinue)}})
	h.cfg.EchoReasoning = false
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	if raw := string(h.requests()[1].Raw); strings.Contains(raw, "REASONING-MARKER-3f1") || strings.Contains(raw, "reasoning_content") {
		t.Errorf("request 2 echoes reasoning_content: %s", raw)
	}
	if r := h.events.ofKind(agent.EventModelResponse)[0]; r.Message == nil || r.Message.ReasoningContent != "REASONING-MARKER-3f1" {
		t.Errorf("the transcript should keep the reasoning the provider sent: %+v", r.Message)
	}
}

func TestNoOutputLimitByDefault(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	if raw := string(h.requests()[0].Raw); strings.Contains(raw, "max_tokens") || strings.Contains(raw, "max_completion_tokens") {
		t.Errorf("request sets an output limit without RALPH_MAX_OUTPUT_TOKENS: %s", raw)
	}
}
