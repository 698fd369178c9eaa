package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

var allTools = []string{"list_files", "read_file", "write_file", "edit_file", "search_files", "run_command", "submit_report"}

func TestSessionRunsToolsAndEndsOnValidReport(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("write_file", map[string]string{"path": "hello.txt", "content": "hello\n"}),
		call("run_command", map[string]any{"command": "cat hello.txt"}),
		submit(validContinue),
	}})
	res, err := h.run()
	if err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	if !reflect.DeepEqual(res.Report, mustReport(t, validContinue)) {
		t.Errorf("report = %+v", res.Report)
	}
	data, err := os.ReadFile(filepath.Join(h.req.Workspace, "hello.txt"))
	if err != nil || string(data) != "hello\n" {
		t.Errorf("hello.txt = %q, %v", data, err)
	}
	reqs := h.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (none after the valid report)", len(reqs))
	}
	if got := offeredTools(reqs[0]); !slices.Equal(got, allTools) {
		t.Errorf("tools offered = %v, want %v", got, allTools)
	}
	tm := toolMessages(reqs[2])
	if len(tm) != 2 || !strings.Contains(tm[1].Content, "exit code: 0") || !strings.Contains(tm[1].Content, "hello") {
		t.Errorf("tool messages before the report = %+v", tm)
	}
	if res.Usage.ModelCalls != 3 || res.Usage.ToolCalls != 3 || res.Usage.PromptTokens <= 0 || res.Usage.CompletionTokens <= 0 {
		t.Errorf("usage = %+v", res.Usage)
	}
	ends := h.events.ofKind(agent.EventSessionEnd)
	if len(ends) != 1 || ends[0].Outcome != agent.OutcomeReport || ends[0].Report == nil {
		t.Errorf("session_end events = %+v", ends)
	}
	if calls := h.events.ofKind(agent.EventToolCall); len(calls) != 3 || calls[1].Tool != "run_command" || calls[1].Step != 2 {
		t.Errorf("tool_call events = %+v", calls)
	}
}

func TestPromptHoldsOnlyTheRoundContract(t *testing.T) {
	prev := report.Report{Status: "continue", Summary: "Half done.", Evidence: []string{}, NextSteps: []string{"Finish <it> & test"}, Blocker: ""}
	for _, tc := range []struct {
		name     string
		previous *report.Report
		want     []string
		dontWant []string
	}{
		{"first round", nil, []string{"Round 1 of 3", "This is the first round"}, []string{"Previous worker"}},
		{"later round", &prev, []string{"Round 1 of 3", `"Finish <it> & test"`, `"status": "continue"`}, []string{"first round"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
			h.req.Previous = tc.previous
			if _, err := h.run(); err != nil {
				t.Fatal(err)
			}
			msgs := h.requests()[0].Chat.Messages
			if len(msgs) != 2 || msgs[0].Role != openai.ChatMessageRoleSystem || msgs[1].Role != openai.ChatMessageRoleUser {
				t.Fatalf("first request messages = %+v, want system then user", msgs)
			}
			prompt := msgs[0].Content + "\n" + msgs[1].Content
			for _, w := range append(tc.want, objective, "fresh worker", "source of truth", "must not", "16384") {
				if w == "must not" {
					w = "Do not start another Ralph loop"
				}
				if !strings.Contains(prompt, w) {
					t.Errorf("prompt lacks %q", w)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(prompt, w) {
					t.Errorf("prompt contains %q", w)
				}
			}
		})
	}
}

func TestInvalidReportIsRepaired(t *testing.T) {
	bad := validContinue
	bad.NextSteps = nil // continue without next steps
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(bad), submit(validContinue)}})
	res, err := h.run()
	if err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	if res.Report.Status != "continue" || res.Usage.ToolCalls != 2 {
		t.Errorf("result = %+v", res)
	}
	reqs := h.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	got := lastMessage(reqs[1])
	if got.Role != openai.ChatMessageRoleTool || !strings.Contains(got.Content, "nextSteps: status continue needs at least one next step") {
		t.Errorf("rejection = %+v, want the exact rule", got)
	}
}

func TestReportNeverValidFailsAfterThreeRepairs(t *testing.T) {
	oversized := validContinue
	oversized.Summary = strings.Repeat("é", 200) // multi-byte, over a 100-character cap
	h := newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return submit(oversized) }})
	h.req.MaxHandoffChars = 100
	res, err := h.run()
	wantChildFailure(t, err, "after 3 repair(s)")
	if !strings.Contains(err.Error(), "over the cap of 100") {
		t.Errorf("error = %v, want the size rule", err)
	}
	if n := len(h.requests()); n != 4 {
		t.Errorf("%d requests, want 4 (one report and three repairs)", n)
	}
	if res.Usage.ToolCalls != 4 || res.Usage.ModelCalls != 4 {
		t.Errorf("usage = %+v", res.Usage)
	}
}

func TestTextAnswersGetTwoRemindersThenOnlySubmitReport(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("I think it is done.") }})
	_, err := h.run()
	wantChildFailure(t, err, "only submit_report was offered")
	reqs := h.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (two reminders, then the final step)", len(reqs))
	}
	for i, r := range reqs[:2] {
		if got := offeredTools(r); !slices.Equal(got, allTools) {
			t.Errorf("request %d offers %v", i, got)
		}
	}
	if got := offeredTools(reqs[2]); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("final request offers %v, want only submit_report", got)
	}
	for i, r := range reqs[1:] {
		if m := lastMessage(r); m.Role != openai.ChatMessageRoleUser || !strings.Contains(m.Content, "submit_report") {
			t.Errorf("request %d ends with %+v, want a reminder", i+1, m)
		}
	}
	if m := lastMessage(reqs[2]); !strings.Contains(m.Content, "Only submit_report is available") {
		t.Errorf("final reminder = %q", m.Content)
	}
}

func TestReportOnFinalStepAfterReminders(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Text("Working on it."), fakeopenai.Text("Still thinking."), submit(validContinue),
	}})
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

func TestUnknownToolAndMalformedArgumentsAreToolErrors(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(
			fakeopenai.Call{Name: "delete_everything", Arguments: `{}`},
			fakeopenai.Call{Name: "read_file", Arguments: `{"path": "a.txt"`},
		),
		fakeopenai.Tools(fakeopenai.Call{Name: "submit_report", Arguments: `{"status": "continue",`}),
		submit(validContinue),
	}})
	res, err := h.run()
	if err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	tm := toolMessages(h.requests()[2])
	if len(tm) != 3 {
		t.Fatalf("tool messages = %+v, want 3", tm)
	}
	for i, want := range []string{`unknown tool "delete_everything"`, "not valid JSON", "report is not a JSON object"} {
		if !strings.HasPrefix(tm[i].Content, "error: ") || !strings.Contains(tm[i].Content, want) {
			t.Errorf("tool message %d = %q, want an error mentioning %q", i, tm[i].Content, want)
		}
	}
	if !strings.Contains(tm[0].Content, "run_command") {
		t.Errorf("unknown-tool answer should list the available tools: %q", tm[0].Content)
	}
	if res.Usage.ToolCalls != 4 {
		t.Errorf("tool calls = %d, want 4", res.Usage.ToolCalls)
	}
}

func TestReasoningContentIsEchoed(t *testing.T) {
	first := call("list_files", map[string]string{})
	first.Reasoning = "The workspace may already hold work; look first."
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{first, submit(validContinue)}})
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	second := h.requests()[1]
	var assistant *openai.ChatCompletionMessage
	for i, m := range second.Chat.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			assistant = &second.Chat.Messages[i]
		}
	}
	if assistant == nil || assistant.ReasoningContent != first.Reasoning {
		t.Fatalf("assistant turn = %+v, want reasoning_content echoed", assistant)
	}
	if !strings.Contains(string(second.Raw), `"reasoning_content":"The workspace may already hold work; look first."`) {
		t.Errorf("raw request lacks reasoning_content")
	}
}

func TestMaxModelCallsBound(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Chat.Tools) == 1 {
			return fakeopenai.Text("not yet")
		}
		return call("run_command", map[string]any{"command": fmt.Sprintf("echo step %d", r.Index)})
	}})
	h.cfg.MaxModelCalls = 3
	res, err := h.run()
	wantChildFailure(t, err, "bound of 3 model calls")
	reqs := h.requests()
	if len(reqs) != 3 || res.Usage.ModelCalls != 3 {
		t.Fatalf("%d requests, usage %+v; want 3", len(reqs), res.Usage)
	}
	last := reqs[2]
	if got := offeredTools(last); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("last request offers %v, want only submit_report", got)
	}
	if m := lastMessage(last); m.Role != openai.ChatMessageRoleUser || !strings.Contains(m.Content, "last model call") {
		t.Errorf("last request ends with %+v", m)
	}
}

func TestMaxModelCallsBoundWithInvalidReports(t *testing.T) {
	bad := validContinue
	bad.Blocker = "something"
	h := newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return submit(bad) }})
	h.cfg.MaxModelCalls = 2
	_, err := h.run()
	wantChildFailure(t, err, "bound of 2 model calls")
	if !strings.Contains(err.Error(), "status continue needs an empty blocker") {
		t.Errorf("error = %v, want the last rejection", err)
	}
}

func TestRepeatedIdenticalCallsForceTheHandoff(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Chat.Tools) == 1 {
			return submit(validContinue)
		}
		return call("run_command", map[string]any{"command": "echo run >> count.txt"})
	}})
	res, err := h.run()
	if err != nil {
		t.Fatalf("RunSession: %v, want a hand-off", err)
	}
	if res.Report.Status != "continue" {
		t.Errorf("report = %+v", res.Report)
	}
	reqs := h.requests()
	if len(reqs) != agent.RepeatHandoffAfter+1 {
		t.Fatalf("%d requests, want %d (the repeats, then the hand-off)", len(reqs), agent.RepeatHandoffAfter+1)
	}
	last := reqs[len(reqs)-1]
	tm := toolMessages(last)
	if warn := tm[agent.RepeatWarnAfter-1].Content; !strings.Contains(warn, "looping") {
		t.Errorf("tool message %d = %q, want a loop warning", agent.RepeatWarnAfter, warn)
	}
	if got := offeredTools(last); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("hand-off request offers %v", got)
	}
	if m := lastMessage(last); m.Role != openai.ChatMessageRoleUser || !strings.Contains(m.Content, "identical arguments 6 times") {
		t.Errorf("hand-off notice = %+v", m)
	}
	data, _ := os.ReadFile(filepath.Join(h.req.Workspace, "count.txt"))
	if got := strings.Count(string(data), "run"); got != agent.RepeatWarnAfter-1 {
		t.Errorf("command ran %d times, want %d (repeats past the warning are not run)", got, agent.RepeatWarnAfter-1)
	}
	if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundLoop {
		t.Errorf("handoff events = %+v", hs)
	}
}
