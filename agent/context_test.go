package agent_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// printChars is a command whose output is n code points of x.
func printChars(n int) map[string]any {
	return map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", n)}
}

func withUsage(r fakeopenai.Response, prompt int) fakeopenai.Response {
	r.Usage = &openai.Usage{PromptTokens: prompt, CompletionTokens: 10}
	return r
}

func TestContextNearlyFullForcesHandoff(t *testing.T) {
	// Reported prompt tokens plus the estimate of each 4000-character result
	// (about 1000 tokens): 6500+1000 stays under 80 % of 10000, 7600+1000
	// passes it.
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		withUsage(call("run_command", printChars(4000)), 6500),
		withUsage(call("run_command", printChars(4001)), 7600),
		submit(validContinue),
	}})
	h.cfg.ContextTokens = 10000
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" {
		t.Fatalf("result = %+v, %v; want the hand-off report", res, err)
	}
	reqs := h.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if got := offeredTools(reqs[1]); !slices.Equal(got, allTools) {
		t.Errorf("request 2 (under 80 %%) offers %v", got)
	}
	if got := offeredTools(reqs[2]); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("request 3 (over 80 %%) offers %v, want only submit_report", got)
	}
	notice := lastMessage(reqs[2])
	for _, want := range []string{"Hand off now: your context is nearly full.", "continue report whose nextSteps", "context: about 8", "of 10000 tokens used"} {
		if !strings.Contains(notice.Content, want) {
			t.Errorf("notice lacks %q:\n%s", want, notice.Content)
		}
	}
	sizes := contextTokensOfRequests(h)
	if len(sizes) != 3 || sizes[1] >= 8000 || sizes[2] <= 8000 || sizes[2] > 10000 {
		t.Errorf("request sizes = %v, want the second under 8000 and the third between 8000 and 10000", sizes)
	}
	if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundContext || hs[0].Step != 3 {
		t.Errorf("handoff events = %+v", hs)
	}
}

func contextTokensOfRequests(h *harness) []int {
	var out []int
	for _, e := range h.events.ofKind(agent.EventModelRequest) {
		out = append(out, e.ContextTokens)
	}
	return out
}

func TestContextEstimateWithoutReportedUsage(t *testing.T) {
	// The provider reports no usage: the whole conversation is estimated,
	// and a 30,000-character result (7500 tokens) passes 80 % of 10000.
	first := call("run_command", printChars(30000))
	first.NoUsage = true
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{first, submit(validContinue)}})
	h.cfg.ContextTokens = 10000
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	reqs := h.requests()
	if got := offeredTools(reqs[1]); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("request 2 offers %v, want only submit_report", got)
	}
	sizes := contextTokensOfRequests(h)
	// Estimates are conservative against the server's own count of bytes.
	for i, r := range reqs {
		if sizes[i] < r.PromptTokens()*8/10 {
			t.Errorf("request %d: estimate %d is far below the server's count %d", i, sizes[i], r.PromptTokens())
		}
	}
}

func TestRequestOverTheWindowIsCompacted(t *testing.T) {
	// One result takes the next request past 100 %: the hand-off request is
	// the compacted one, never the full conversation.
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("list_files", map[string]string{}),
		call("run_command", printChars(29000)),
		submit(validContinue),
	}})
	h.cfg.ContextTokens = 8000
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	reqs := h.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	wantCompacted(t, reqs[0], reqs[2], []string{`list_files {}`, `run_command {"command":"head -c 29000 /dev/zero | tr '\\0' x"}`},
		"Hand off now: your context is nearly full.")
	for i, size := range contextTokensOfRequests(h) {
		if size > h.cfg.ContextTokens {
			t.Errorf("request %d was sent with about %d tokens, over the window of %d", i, size, h.cfg.ContextTokens)
		}
	}
	if reqs[2].PromptTokens() > h.cfg.ContextTokens {
		t.Errorf("the compacted request is %d tokens by the server's count", reqs[2].PromptTokens())
	}
}

// wantCompacted checks the exact shape of a compacted request: the first
// request's system prompt and round prompt, then one user message listing
// the calls and ending with the hand-off notice; only submit_report offered.
func wantCompacted(t *testing.T, first, compacted fakeopenai.Request, calls []string, notice string) {
	t.Helper()
	msgs := compacted.Chat.Messages
	if len(msgs) != 4 || msgs[2].Role != openai.ChatMessageRoleAssistant {
		t.Fatalf("compacted request has %d messages, want 4 (no two user messages in a row): %+v", len(msgs), msgs)
	}
	if !reflect.DeepEqual(msgs[:2], first.Chat.Messages[:2]) {
		t.Errorf("compacted request does not start with the system and round prompts")
	}
	if got := offeredTools(compacted); !slices.Equal(got, []string{"submit_report"}) {
		t.Errorf("compacted request offers %v", got)
	}
	var list strings.Builder
	for _, c := range calls {
		list.WriteString("- " + c + "\n")
	}
	wantPrefix := "Your conversation of this round no longer fits the model's context, so it was replaced by this summary. " +
		"Tool calls made so far in this round, oldest first:\n" + list.String() + "\n" + notice
	if msgs[3].Role != openai.ChatMessageRoleUser || !strings.HasPrefix(msgs[3].Content, wantPrefix) {
		t.Errorf("compacted message =\n%s\nwant it to start with\n%s", msgs[3].Content, wantPrefix)
	}
	if !strings.Contains(msgs[3].Content, "\nRemaining: model calls: ") {
		t.Errorf("compacted message lacks the remaining amounts:\n%s", msgs[3].Content)
	}
}

func TestContextLengthErrorGetsOneCompactedRequest(t *testing.T) {
	for _, style := range []fakeopenai.ContextStyle{fakeopenai.ContextOpenAI, fakeopenai.ContextDeepSeek, fakeopenai.ContextVLLM, fakeopenai.ContextOllama, fakeopenai.ContextLlamaCpp} {
		t.Run(string(style), func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
				call("run_command", map[string]any{"command": "echo one"}),
				fakeopenai.ContextLengthExceeded(style),
				submit(validContinue),
			}})
			res, err := h.run()
			if err != nil || res.Report.Status != "continue" {
				t.Fatalf("result = %+v, %v; want the hand-off report", res, err)
			}
			reqs := h.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			wantCompacted(t, reqs[0], reqs[2], []string{`run_command {"command":"echo one"}`},
				"Hand off now: the model provider refused the last request as too long for the model's context.")
			if res.Usage.ModelCalls != 2 {
				t.Errorf("usage = %+v, want the two answered calls", res.Usage)
			}
			if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundContextError {
				t.Errorf("handoff events = %+v", hs)
			}
			var compacted []agent.Event
			for _, e := range h.events.ofKind(agent.EventModelRequest) {
				if e.Compacted {
					compacted = append(compacted, e)
				}
			}
			if len(compacted) != 1 || len(compacted[0].Messages) != 4 {
				t.Errorf("compacted model_request events = %+v, want one carrying the whole new conversation", compacted)
			}
		})
	}
}

func TestSecondContextLengthErrorIsChildFailure(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]any{"command": "echo one"}),
		fakeopenai.ContextLengthExceeded(fakeopenai.ContextOpenAI),
		fakeopenai.ContextLengthExceeded(fakeopenai.ContextOpenAI),
	}})
	_, err := h.run()
	wantChildFailure(t, err, "too long for the model's context")
	if !strings.Contains(err.Error(), "again, after the compacted hand-off request") {
		t.Errorf("error = %v", err)
	}
	if n := len(h.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestCompactedRequestTooLargeIsChildFailureWithoutSending(t *testing.T) {
	// The system prompt, tools and round prompt alone pass the window.
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	h.cfg.ContextTokens = 300
	_, err := h.run()
	wantChildFailure(t, err, "more than the model's context of 300")
	if n := len(h.requests()); n != 0 {
		t.Errorf("%d requests sent, want none above the window", n)
	}
}

func TestScriptedContextLimitIsNeverHit(t *testing.T) {
	// A provider with a 12000-token window that refuses anything larger,
	// and a model that keeps printing 20,000 characters: the session hands
	// off before the provider ever refuses.
	h := newHarness(t, fakeopenai.Script{ContextLimit: 12000, Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Chat.Tools) == 1 {
			return submit(validContinue)
		}
		return call("run_command", printChars(20000+r.Index))
	}})
	h.cfg.ContextTokens = 12000
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	for _, e := range h.events.ofKind(agent.EventModelError) {
		t.Errorf("model error: %+v", e)
	}
	for _, r := range h.requests() {
		if r.PromptTokens() > 12000 {
			t.Errorf("request %d is %d tokens", r.Index, r.PromptTokens())
		}
	}
}
