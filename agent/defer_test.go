package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// deferredOf asserts err is a deferral and returns it.
func deferredOf(t *testing.T, err error) *agent.DeferredError {
	t.Helper()
	d, ok := agent.AsDeferred(err)
	if !ok {
		t.Fatalf("error = %v (%T), want a deferral", err, err)
	}
	if agent.IsChildFailure(err) || agent.IsModelUnavailable(err) {
		t.Fatalf("a deferral must be neither a child failure nor ModelUnavailable: %v", err)
	}
	return d
}

func TestLongRetryAfterDefersAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer fakeopenai.Response
		reason string
		secs   int
	}{
		{"429 Retry-After 75", fakeopenai.RateLimited("75"), agent.DeferRateLimited, 75},
		{"503 Retry-After 7200", fakeopenai.Unavailable("7200"), agent.DeferUnavailable, 7200},
		{"429 reset-requests 6m0s", fakeopenai.RateLimitedReset("6m0s", "20ms"), agent.DeferRateLimited, 360},
		{"429 reset-tokens 1m30.5s", fakeopenai.RateLimitedReset("1s", "1m30.5s"), agent.DeferRateLimited, 91},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A tool call first, so the deferral comes mid-session with usage spent.
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
				fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "wip.txt", "content": "half done\n"})),
				tc.answer,
			}})
			h.req.Deferrable = true
			res, err := h.run()
			d := deferredOf(t, err)
			if d.Reason != tc.reason || d.RetryAfterSeconds() != tc.secs {
				t.Errorf("deferral = %+v (%d s), want %s after %d s", d, d.RetryAfterSeconds(), tc.reason, tc.secs)
			}
			// The session stopped at once: no retry of the refused request.
			if n := len(h.requests()); n != 2 {
				t.Errorf("%d requests reached the provider, want 2 (no retry after a long wait was asked)", n)
			}
			if res.Usage.ModelCalls != 1 || res.Usage.ToolCalls != 1 || res.Usage.PromptTokens == 0 {
				t.Errorf("usage = %+v, want the first call and its tool call", res.Usage)
			}
			if data, err := os.ReadFile(filepath.Join(h.req.Workspace, "wip.txt")); err != nil || string(data) != "half done\n" {
				t.Errorf("the deferred session's write is gone: %q, %v", data, err)
			}
			end := h.events.ofKind(agent.EventSessionEnd)
			if len(end) != 1 || end[0].Outcome != agent.OutcomeDeferred || end[0].Model != "fake-model" {
				t.Errorf("session_end = %+v, want outcome deferred on fake-model", end)
			}
		})
	}
}

func TestShortResetHeadersAreRetriedInSession(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.RateLimitedReset("20ms", "1s"), submit(validContinue),
	}})
	h.req.Deferrable = true
	if _, err := h.run(); err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	if e := h.events.ofKind(agent.EventModelError); len(e) != 1 || e[0].RetryInMs != 1000 {
		t.Errorf("model_error = %+v, want the longer reset (1 s) honoured", e)
	}
}

func TestInsufficientQuotaDefers(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.QuotaExhausted()}})
	h.req.Deferrable = true
	_, err := h.run()
	d := deferredOf(t, err)
	if d.Reason != agent.DeferQuota || d.RetryAfterSeconds() != 0 {
		t.Errorf("deferral = %+v, want quota without a delay", d)
	}
	if n := len(h.requests()); n != 1 {
		t.Errorf("%d requests, want 1: waiting a minute does not refill a quota", n)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Error("the key leaked into the deferral")
	}
}

// A session that may not defer (a run whose limits predate deferrals) keeps
// the old behaviour: quota is an ordinary failure, a long wait is capped.
func TestNotDeferrableKeepsOldBehaviour(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.QuotaExhausted()}})
	if _, err := h.run(); !agent.IsChildFailure(err) {
		t.Errorf("quota without deferrals = %v, want a child failure", err)
	}
	h = newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Unavailable("") }})
	h.cfg.TransientRetries = 1
	if _, err := h.run(); !agent.IsModelUnavailable(err) {
		t.Errorf("an outage without deferrals = %v, want ModelUnavailable", err)
	}
}

func TestOutageDefersAfterRetries(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Unavailable("")
	}})
	h.cfg.TransientRetries = 2
	h.req.Deferrable = true
	_, err := h.run()
	d := deferredOf(t, err)
	if d.Reason != agent.DeferUnavailable || d.RetryAfterSeconds() != 0 {
		t.Errorf("deferral = %+v, want unavailable without a delay", d)
	}
	if n := len(h.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (one try and 2 retries)", n)
	}
}

func TestFallbackModelsInOrderWithTheirOwnRetries(t *testing.T) {
	// The primary answers the first call, then only 503s; fallback-1 only
	// 429s; fallback-2 answers. Each model gets 1 + 2 retries.
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		switch {
		case r.Index == 0:
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "a.txt", "content": "a\n"}))
		case r.Chat.Model == "fake-model":
			return fakeopenai.Unavailable("")
		case r.Chat.Model == "fallback-1":
			return fakeopenai.RateLimited("0")
		default:
			return submit(validContinue)
		}
	}})
	h.cfg.TransientRetries = 2
	h.cfg.FallbackModels = []string{"fallback-1", "fallback-2"}
	h.req.Deferrable = true
	res, err := h.run()
	if err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	var models []string
	for _, r := range h.requests() {
		models = append(models, r.Chat.Model)
	}
	want := "fake-model fake-model fake-model fake-model fallback-1 fallback-1 fallback-1 fallback-2"
	if got := strings.Join(models, " "); got != want {
		t.Errorf("models per request = %s\nwant %s", got, want)
	}
	// The same conversation went on: the fallback saw the first call's tool result.
	last := h.requests()[len(h.requests())-1].Chat.Messages
	if len(last) < 4 || last[len(last)-1].Role != "tool" {
		t.Errorf("fallback-2 did not get the conversation so far: %d messages", len(last))
	}
	if res.Model != "fallback-2" {
		t.Errorf("result model = %q, want fallback-2 (it produced the report)", res.Model)
	}
	fb := h.events.ofKind(agent.EventModelFallback)
	if len(fb) != 2 || fb[0].Model != "fallback-1" || fb[1].Model != "fallback-2" {
		t.Errorf("model_fallback events = %+v", fb)
	}
	end := h.events.ofKind(agent.EventSessionEnd)
	if len(end) != 1 || end[0].Model != "fallback-2" {
		t.Errorf("session_end = %+v, want model fallback-2", end)
	}
}

func TestFallbacksSpentThenDeferred(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.RateLimited("0")
	}})
	h.cfg.TransientRetries = 1
	h.cfg.FallbackModels = []string{"fallback-1"}
	h.req.Deferrable = true
	_, err := h.run()
	d := deferredOf(t, err)
	if d.Reason != agent.DeferRateLimited || d.Model != "fallback-1" {
		t.Errorf("deferral = %+v, want rate-limited on fallback-1", d)
	}
	if n := len(h.requests()); n != 4 {
		t.Errorf("%d requests, want 4 (2 per model)", n)
	}
}

func TestFallbackModelNamesAreChecked(t *testing.T) {
	cfg := agent.DefaultConfig()
	cfg.Model = "m"
	cfg.FallbackModels = []string{"ok", " "}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "fallback model 2") {
		t.Errorf("Validate = %v, want an error naming fallback model 2", err)
	}
}
