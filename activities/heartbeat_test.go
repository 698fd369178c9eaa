package activities

import (
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/usage"
)

func TestHeartbeatFollowsTheSession(t *testing.T) {
	h := &heartbeat{details: HeartbeatDetails{Round: 2}}
	for _, e := range []agent.Event{
		{Kind: agent.EventModelRequest, Step: 1, ContextTokens: 900},
		{Kind: agent.EventModelResponse, Step: 1, ContextTokens: 1000, Usage: &usage.Usage{PromptTokens: 1000}},
		{Kind: agent.EventToolCall, Step: 1, Tool: "run_command"},
		{Kind: agent.EventModelRequest, Step: 2, ContextTokens: 6400},
		{Kind: agent.EventModelResponse, Step: 2}, // no usage reported: the estimate stays
		{Kind: agent.EventToolCall, Step: 2, Tool: "submit_report"},
		{Kind: agent.EventVerifyStart, Step: 2, Tool: agent.VerifyTool},
	} {
		h.Observe(e)
	}
	got := h.snapshot()
	want := HeartbeatDetails{Round: 2, Step: 2, LastTool: "verify", ContextTokens: 6400,
		Usage: usage.Usage{ModelCalls: 2, ToolCalls: 2, PromptTokens: 1000}}
	if got != want {
		t.Errorf("details = %+v, want %+v", got, want)
	}
}
