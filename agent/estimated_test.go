package agent_test

import (
	"fmt"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/usage"
)

// A provider that reports no usage: each answer is booked at the estimate,
// apart (usage.estimated), and the run's token budget charges it, so the
// budget still forces the hand-off (issue 51). Without the estimate the
// session would spend nothing against the budget and work on past it.
func TestAnswersWithoutUsageAreEstimatedAndCharged(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		a := call("run_command", map[string]any{"command": fmt.Sprintf("echo %d", r.Index)})
		if len(r.Chat.Tools) == 1 {
			a = submit(validContinue)
		}
		a.NoUsage = true
		return a
	}})
	h.req.TokenBudget = 9000
	h.cfg.MaxOutputTokens = 100
	res, err := h.run()
	wantHandoff(t, h, res, err, agent.BoundTokenBudget, "the next request would pass what is left of the run's token budget")
	u, calls := res.Usage, len(h.requests())
	if u.PromptTokens != 0 || u.CompletionTokens != 0 || u.ModelCalls != calls || u.Estimated.ModelCalls != calls {
		t.Fatalf("usage %+v after %d answers without usage: want every answer under estimated, none reported", u, calls)
	}
	// The estimate of a request is the one the bounds used for it.
	want := 0
	for _, e := range h.events.ofKind(agent.EventModelRequest) {
		want += e.ContextTokens
	}
	if u.Estimated.PromptTokens != want || u.Estimated.CompletionTokens < calls {
		t.Errorf("estimated %+v, want %d prompt tokens (the requests' estimates) and a few per answer", u.Estimated, want)
	}
	if u.Tokens() <= 9000-3000 {
		t.Errorf("charged %d tokens of a 9000 budget before its hand-off", u.Tokens())
	}
}

// A provider that reports usage on every answer leaves estimated all zero.
func TestReportedUsageLeavesEstimatedZero(t *testing.T) {
	h := newHarness(t, untilReportOnly(func(r fakeopenai.Request) fakeopenai.Response {
		return withUsage(call("run_command", map[string]any{"command": fmt.Sprintf("echo %d", r.Index)}), 3000)
	}))
	h.req.TokenBudget = 9000
	h.cfg.MaxOutputTokens = 100
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	calls := len(h.requests())
	if res.Usage.Estimated != (usage.Counts{}) || res.Usage.PromptTokens < 3000*(calls-1) || res.Usage.ModelCalls != calls {
		t.Errorf("usage %+v after %d answers with usage, want estimated all zero", res.Usage, calls)
	}
}
