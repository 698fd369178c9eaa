package fakeopenai

import (
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestRequestReading(t *testing.T) {
	req := Request{Chat: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a fresh worker."},
		{Role: openai.ChatMessageRoleUser, Content: "Round 3 of 8.\n\nObjective:\nfix it"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "a"}}},
		{Role: openai.ChatMessageRoleTool, Content: "first output", ToolCallID: "a"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "b"}}},
		{Role: openai.ChatMessageRoleTool, Content: "Round 9 of 9 in a file", ToolCallID: "b"},
	}}}
	if got := req.Round(); got != 3 {
		t.Errorf("Round = %d, want 3 (tool output must not count)", got)
	}
	if got := req.Step(); got != 2 {
		t.Errorf("Step = %d, want 2", got)
	}
	if got := req.LastToolOutput(); got != "Round 9 of 9 in a file" {
		t.Errorf("LastToolOutput = %q", got)
	}
	if got, want := req.Prompt(), "You are a fresh worker.\nRound 3 of 8.\n\nObjective:\nfix it\n"; got != want {
		t.Errorf("Prompt = %q, want %q", got, want)
	}
	var empty Request
	if empty.Round() != 0 || empty.Step() != 0 || empty.LastToolOutput() != "" || empty.Prompt() != "" {
		t.Error("an empty request reads as non-empty")
	}
}
