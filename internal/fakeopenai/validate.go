package fakeopenai

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// validateRequest rejects what strict providers reject with a 400, so a
// client bug shows up in tests rather than against a real endpoint: an
// unanswered or unknown tool call, an empty tool message, unknown roles,
// duplicate tool names.
func validateRequest(req openai.ChatCompletionRequest) error {
	if req.Model == "" {
		return fmt.Errorf("model is required")
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("messages must not be empty")
	}
	if err := validateTools(req.Tools); err != nil {
		return err
	}
	pending := map[string]bool{} // tool call ids still to be answered
	for i, m := range req.Messages {
		if m.Role != openai.ChatMessageRoleTool && len(pending) > 0 {
			return fmt.Errorf("messages[%d]: an assistant message with tool_calls must be followed by tool messages answering each tool_call_id (missing %s)", i, strings.Join(keys(pending), ", "))
		}
		switch m.Role {
		case openai.ChatMessageRoleSystem, openai.ChatMessageRoleUser:
			if m.Content == "" && len(m.MultiContent) == 0 {
				return fmt.Errorf("messages[%d]: %s message content must be non-empty", i, m.Role)
			}
		case openai.ChatMessageRoleAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				return fmt.Errorf("messages[%d]: assistant message needs content or tool_calls", i)
			}
			for j, c := range m.ToolCalls {
				if c.ID == "" {
					return fmt.Errorf("messages[%d].tool_calls[%d]: id is required", i, j)
				}
				if pending[c.ID] {
					return fmt.Errorf("messages[%d].tool_calls[%d]: duplicate id %q", i, j, c.ID)
				}
				pending[c.ID] = true
			}
		case openai.ChatMessageRoleTool:
			if !pending[m.ToolCallID] {
				return fmt.Errorf("messages[%d]: tool message answers tool_call_id %q, which no preceding assistant message left unanswered", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			if m.Content == "" {
				return fmt.Errorf("messages[%d]: tool message content must be non-empty", i)
			}
		default:
			return fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("the last assistant message has unanswered tool calls (%s)", strings.Join(keys(pending), ", "))
	}
	return nil
}

func validateTools(tools []openai.Tool) error {
	seen := map[string]bool{}
	for i, t := range tools {
		if t.Type != openai.ToolTypeFunction || t.Function == nil || t.Function.Name == "" {
			return fmt.Errorf("tools[%d]: want a function with a name", i)
		}
		if seen[t.Function.Name] {
			return fmt.Errorf("tools[%d]: duplicate function name %q", i, t.Function.Name)
		}
		seen[t.Function.Name] = true
	}
	return nil
}

func keys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}
