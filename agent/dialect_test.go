package agent_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// Each test plays one provider quirk (docs/reference.md, "Providers and
// their quirks") against a session, streamed and not.
func onChatWires(t *testing.T, test func(t *testing.T, h func(fakeopenai.Script) *harness)) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "streamed", false: "not streamed"}[stream]
		t.Run(name, func(t *testing.T) {
			test(t, func(s fakeopenai.Script) *harness {
				h := newHarness(t, s)
				h.cfg.Stream = stream
				return h
			})
		})
	}
}

var nineAlnum = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

func TestToolCallsWrittenAsTextAreRun(t *testing.T) {
	onChatWires(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		write := func(name string) fakeopenai.Call {
			return fakeopenai.CallJSON("write_file", map[string]string{"path": name, "content": name + "\n"})
		}
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{
			fakeopenai.TextCall("bare", write("bare.txt")),
			fakeopenai.TextCall("fence", write("fence.txt")),
			fakeopenai.TextCall("tags", write("tags.txt")),
			fakeopenai.TextCall("bare", fakeopenai.CallJSON("not_a_tool", map[string]string{})), // text, not a call
			fakeopenai.TextCall("tags", fakeopenai.SubmitReport(validContinue)),
		}})
		res, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"bare.txt", "fence.txt", "tags.txt"} {
			if data, err := os.ReadFile(filepath.Join(h.req.Workspace, name)); err != nil || string(data) != name+"\n" {
				t.Errorf("%s = %q, %v", name, data, err)
			}
		}
		if res.Usage.ToolCalls != 4 || res.Report.Status != "continue" {
			t.Errorf("usage %+v, report %+v: want 4 tool calls and the report from the tags", res.Usage, res.Report)
		}
		echoed := h.requests()[1].Chat.Messages[2]
		if len(echoed.ToolCalls) != 1 || !nineAlnum.MatchString(echoed.ToolCalls[0].ID) || echoed.Content != "" {
			t.Errorf("echoed turn = %+v, want one call with a generated nine-character id", echoed)
		}
		if n := len(h.events.ofKind(agent.EventModelResponse)); n != 5 {
			t.Errorf("%d answers", n)
		}
	})
}

func TestArgumentsAsObjectsAndContentPartsAreRead(t *testing.T) {
	onChatWires(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		write := call("write_file", map[string]string{"path": "obj.txt", "content": "object\n"})
		write.Dialect = fakeopenai.ArgumentsObject
		text := fakeopenai.Text("Let me think about this.")
		text.Dialect = fakeopenai.ContentParts
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{write, text, submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(filepath.Join(h.req.Workspace, "obj.txt")); err != nil || string(data) != "object\n" {
			t.Errorf("obj.txt = %q, %v", data, err)
		}
		if got := h.requests()[2].Chat.Messages[4]; got.Content != "Let me think about this." {
			t.Errorf("text answer echoed as %q", got.Content)
		}
	})
}

func TestSuccessWithErrorObjectIsThatError(t *testing.T) {
	ctxErr := `{"error":{"message":"This model's maximum context length is 8192 tokens.","code":400}}`
	onChatWires(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{
			fakeopenai.Raw(http.StatusOK, `{"error":{"message":"upstream provider timed out","code":504}}`),
			fakeopenai.Raw(http.StatusOK, ctxErr),
			submit(validContinue),
		}})
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		errs := h.events.ofKind(agent.EventModelError)
		if len(errs) != 2 || errs[0].HTTPStatus != 504 || !errs[0].Transient || errs[1].HTTPStatus != 400 || errs[1].Transient {
			t.Fatalf("model errors = %+v; want a transient 504, then a 400", errs)
		}
		if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundContextError {
			t.Errorf("handoffs = %+v, want the context-length compaction", hs)
		}
	})
}

func TestGroqToolUseFailedIsAMalformedAnswer(t *testing.T) {
	failed := `<function=write_file>{"path": "a.txt", "content": "unterminated`
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.ToolUseFailed(failed + strings.Repeat("x", 5000)),
		submit(validContinue),
	}})
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	msgs := h.requests()[1].Chat.Messages
	told := msgs[2].Content
	if !strings.Contains(told, failed) || len([]rune(told)) > 2200 || msgs[3].Role != openai.ChatMessageRoleUser {
		t.Errorf("the session was told %q (then %+v); want the clipped failed generation and a reminder", told, msgs[3])
	}
}

func TestInsufficientBalanceIsQuota(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Status(http.StatusPaymentRequired, "Insufficient Balance")}})
	h.req.Deferrable = true
	_, err := h.run()
	if d := deferredOf(t, err); d.Reason != agent.DeferQuota {
		t.Errorf("deferral = %+v, want quota", d)
	}
}

func TestContextLengthPhrasesOfMoreProviders(t *testing.T) {
	for _, style := range []fakeopenai.ContextStyle{fakeopenai.ContextSGLang, fakeopenai.ContextGemini, fakeopenai.ContextXAI, fakeopenai.ContextGroq} {
		t.Run(string(style), func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.ContextLengthExceeded(style), submit(validContinue)}})
			if _, err := h.run(); err != nil {
				t.Fatalf("a context-length refusal must be answered with the compacted request: %v", err)
			}
			if !isCompacted(h.requests()[1]) {
				t.Errorf("second request is not the compacted one: %+v", h.requests()[1].Chat.Messages)
			}
		})
	}
}

func TestResetHeadersCountOnlyOn429(t *testing.T) {
	busy := fakeopenai.Status(http.StatusInternalServerError, "busy")
	busy.Fault.Header = map[string]string{"x-ratelimit-reset-requests": "8m38s"}
	unavailable := fakeopenai.Unavailable("")
	unavailable.Fault.Header = map[string]string{"x-ratelimit-reset-tokens": "8m38s"}
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{busy, unavailable, submit(validContinue)}})
	h.req.Deferrable = true
	if _, err := h.run(); err != nil {
		t.Fatalf("a 500 and a 503 with reset headers must be retried in the session, not deferred: %v", err)
	}
	for _, e := range h.events.ofKind(agent.EventModelError) {
		if e.RetryInMs > 1000 {
			t.Errorf("retry after %d ms: the reset header of a %d was honoured", e.RetryInMs, e.HTTPStatus)
		}
	}
}

func TestPermanentServerErrorIsAChildFailure(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Status(http.StatusInternalServerError, "tools param requires --jinja flag")}})
	h.req.Deferrable = true
	_, err := h.run()
	wantChildFailure(t, err, "--jinja")
	if n := len(h.requests()); n != 1 {
		t.Errorf("%d requests: a permanent misconfiguration is not retried", n)
	}
}

func TestGeminiThoughtSignaturesAreCarriedBack(t *testing.T) {
	onChatWires(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		list := call("list_files", map[string]string{})
		list.Dialect = fakeopenai.GeminiSignatures
		h := newH(fakeopenai.Script{Strict: fakeopenai.Strictness{Gemini: true}, Queue: []fakeopenai.Response{list, submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatalf("the second request must carry the signature back: %v", err)
		}
	})
}

func TestDeepSeekReasoningContentAlsoWhenEmpty(t *testing.T) {
	onChatWires(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		think := call("list_files", map[string]string{})
		think.Reasoning = "Look first."
		h := newH(fakeopenai.Script{Strict: fakeopenai.Strictness{DeepSeekThinking: true}, Queue: []fakeopenai.Response{
			think, call("list_files", map[string]string{"path": "."}), submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatalf("every assistant turn must carry reasoning_content once seen: %v", err)
		}
	})
}

func TestVLLMReasoningIsEchoedUnderItsName(t *testing.T) {
	onChatWires(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		think := call("list_files", map[string]string{})
		think.Reasoning, think.Dialect = "Look first.", fakeopenai.VLLMReasoning
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{think, submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages []map[string]json.RawMessage `json:"messages"`
		}
		json.Unmarshal(h.requests()[1].Raw, &body)
		if got := string(body.Messages[2]["reasoning"]); got != `"Look first."` {
			t.Errorf("echoed reasoning = %s, want the text under vLLM's field", got)
		}
	})
}

func TestToolMessagesNameTheirTool(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Strict: fakeopenai.Strictness{Mistral: true}, Queue: []fakeopenai.Response{
		{ToolCalls: []fakeopenai.Call{{ID: "abcDEF123", Name: "list_files", Arguments: "{}"}}},
		submit(validContinue)}})
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	if tm := toolMessages(h.requests()[1]); len(tm) != 1 || tm[0].Name != "list_files" {
		t.Errorf("tool messages = %+v, want the tool's name on each", tm)
	}
}

func TestExtraBodyIsMergedIntoEveryRequest(t *testing.T) {
	for _, api := range []string{agent.WireChat, agent.WireResponses} {
		t.Run(api, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{call("list_files", map[string]string{}), submit(validContinue)}})
			h.cfg.WireAPI = api
			h.cfg.ExtraBody = map[string]any{"enable_thinking": false, "chat_template_kwargs": map[string]any{"thinking": true}}
			if _, err := h.run(); err != nil {
				t.Fatal(err)
			}
			for _, r := range h.requests() {
				var body struct {
					EnableThinking *bool           `json:"enable_thinking"`
					Kwargs         json.RawMessage `json:"chat_template_kwargs"`
				}
				json.Unmarshal(r.Raw, &body)
				if body.EnableThinking == nil || *body.EnableThinking || string(body.Kwargs) != `{"thinking":true}` {
					t.Errorf("request %d: enable_thinking %v, chat_template_kwargs %s", r.Index, body.EnableThinking, body.Kwargs)
				}
			}
		})
	}
}

func TestOutputLimitFieldAndReasoningEffort(t *testing.T) {
	for _, tc := range []struct {
		model, field, want, effort string
	}{
		{"gpt-5-codex", "", "max_completion_tokens", "high"},
		{"o4-mini", "", "max_completion_tokens", ""},
		{"qwen3-coder", "", "max_tokens", "low"},
		{"my-azure-deployment", agent.MaxCompletionTokensField, "max_completion_tokens", ""},
		{"gpt-5", agent.MaxTokensField, "max_tokens", ""},
	} {
		t.Run(tc.model, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
			h.cfg.Model, h.cfg.MaxOutputTokens, h.cfg.MaxTokensFieldName, h.cfg.ReasoningEffort = tc.model, 4096, tc.field, tc.effort
			if _, err := h.run(); err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			json.Unmarshal(h.requests()[0].Raw, &body)
			other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tc.want]
			if string(body[tc.want]) != "4096" || body[other] != nil {
				t.Errorf("%s = %s, %s = %s", tc.want, body[tc.want], other, body[other])
			}
			if effort := jsonText(body["reasoning_effort"]); effort != tc.effort {
				t.Errorf("reasoning_effort = %q, want %q", effort, tc.effort)
			}
		})
	}
}

func jsonText(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

func TestSilentTruncationIsWarnedOnceAndTheEstimateDrivesTheBounds(t *testing.T) {
	small := func(r fakeopenai.Response) fakeopenai.Response {
		r.Usage = &openai.Usage{PromptTokens: 300, CompletionTokens: 10}
		return r
	}
	big := strings.Repeat("padding line for the context\n", 300)
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		small(call("write_file", map[string]string{"path": "big.txt", "content": big})),
		small(call("read_file", map[string]string{"path": "big.txt"})),
		small(submit(validContinue)),
	}})
	h.cfg.ContextTokens = 6000
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	warnings := h.events.ofKind(agent.EventModelWarning)
	if len(warnings) != 1 || !strings.Contains(warnings[0].Error, "OLLAMA_CONTEXT_LENGTH") {
		t.Fatalf("warnings = %+v, want one naming OLLAMA_CONTEXT_LENGTH", warnings)
	}
	if res.Usage.PromptTokens != 900 {
		t.Errorf("usage prompt tokens = %d, want what the provider counted (900)", res.Usage.PromptTokens)
	}
	if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundContext {
		t.Errorf("handoffs = %+v, want the context bound (the provider's 300 tokens would never reach it)", hs)
	}
}

func TestNoUserMessageRightAfterAToolMessage(t *testing.T) {
	mistralCall := func(id, name string) fakeopenai.Response {
		return fakeopenai.Response{ToolCalls: []fakeopenai.Call{{ID: id, Name: name, Arguments: "{}"}}}
	}
	cut := mistralCall("cutCall01", "list_files")
	cut.FinishReason = openai.FinishReasonLength
	h := newHarness(t, fakeopenai.Script{Strict: fakeopenai.Strictness{Mistral: true}, Queue: []fakeopenai.Response{
		cut,                                    // answered by tool results and the cut-off notice
		mistralCall("listCall1", "list_files"), // then the forced hand-off of the last model call
		{ToolCalls: []fakeopenai.Call{{ID: "reportId1", Name: "submit_report", Arguments: fakeopenai.SubmitReport(validContinue).Arguments}}},
	}})
	h.cfg.MaxModelCalls = 3
	if _, err := h.run(); err != nil {
		t.Fatalf("a strict provider refused the notices: %v", err)
	}
	if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundModelCalls {
		t.Errorf("handoffs = %+v, want the model-calls bound", hs)
	}
	for _, r := range h.requests() {
		msgs := r.Chat.Messages
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Role == openai.ChatMessageRoleUser && msgs[i-1].Role != openai.ChatMessageRoleAssistant && msgs[i-1].Role != openai.ChatMessageRoleSystem {
				t.Errorf("request %d: message %d is a user message after a %s message", r.Index, i, msgs[i-1].Role)
			}
		}
	}
}
