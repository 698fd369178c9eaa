package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// WireMessages is the Anthropic Messages API (POST /v1/messages), the API
// Claude Code speaks: its requests are read into the chat shape, its
// answers written as Messages events (streamed with event names, as the
// Anthropic SDKs dispatch on them).
const WireMessages = "messages"

type messagesBody struct {
	Model     string            `json:"model"`
	System    json.RawMessage   `json:"system"`
	Messages  []messagesMessage `json:"messages"`
	Tools     []messagesTool    `json:"tools"`
	Stream    bool              `json:"stream"`
	MaxTokens int               `json:"max_tokens"`
}

type messagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type messagesTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	InputSchema any    `json:"input_schema"`
}

type messagesBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// decodeMessages reads a Messages body into req.Chat: text blocks as
// content, tool_use blocks as tool calls, tool_result blocks as tool
// messages (in their order).
func decodeMessages(raw []byte, req *Request) error {
	var body messagesBody
	if err := json.Unmarshal(raw, &body); err != nil {
		return err
	}
	req.Wire = WireMessages
	chat := openai.ChatCompletionRequest{Model: body.Model, Stream: body.Stream, MaxTokens: body.MaxTokens} //lint:ignore SA1019 the fake's own record of the limit
	if sys := blocksText(body.System); sys != "" {
		chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: sys})
	}
	for _, t := range body.Tools {
		if t.Name == "" {
			continue // a server tool
		}
		chat.Tools = append(chat.Tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	for i, m := range body.Messages {
		msgs, err := chatMessages(m)
		if err != nil {
			return fmt.Errorf("messages[%d]: %v", i, err)
		}
		chat.Messages = append(chat.Messages, msgs...)
	}
	req.Chat = chat
	return nil
}

func chatMessages(m messagesMessage) ([]openai.ChatCompletionMessage, error) {
	var blocks []messagesBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			return nil, fmt.Errorf("content is neither text nor blocks")
		}
		return []openai.ChatCompletionMessage{{Role: m.Role, Content: text}}, nil
	}
	var out []openai.ChatCompletionMessage
	var text strings.Builder
	var calls []openai.ToolCall
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			calls = append(calls, openai.ToolCall{ID: b.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: b.Name, Arguments: string(b.Input)}})
		case "tool_result":
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: b.ToolUseID, Content: orEmpty(blocksText(b.Content))})
		}
	}
	if text.Len() > 0 || len(calls) > 0 {
		out = append(out, openai.ChatCompletionMessage{Role: m.Role, Content: text.String(), ToolCalls: calls})
	}
	return out, nil
}

func orEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// blocksText is the text of a string or of text blocks.
func blocksText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	return contentText(raw)
}

// messageObject is resp as a Messages answer.
func messageObject(req Request, resp Response) map[string]any {
	full := completionFor(req, resp)
	msg := full.Choices[0].Message
	var content []any
	if msg.Content != nil && *msg.Content != "" {
		content = append(content, map[string]any{"type": "text", "text": *msg.Content})
	}
	for _, c := range msg.ToolCalls {
		var input any = map[string]any{}
		_ = json.Unmarshal([]byte(c.Function.Arguments), &input)
		content = append(content, map[string]any{"type": "tool_use", "id": strings.Replace(c.ID, "call_", "toolu_", 1), "name": c.Function.Name, "input": input})
	}
	stop := "end_turn"
	switch full.Choices[0].FinishReason {
	case openai.FinishReasonToolCalls:
		stop = "tool_use"
	case openai.FinishReasonLength:
		stop = "max_tokens"
	}
	obj := map[string]any{"id": fmt.Sprintf("msg_fake_%d", req.Index), "type": "message", "role": "assistant", "model": full.Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil}
	if full.Usage != nil {
		obj["usage"] = map[string]any{"input_tokens": full.Usage.PromptTokens, "output_tokens": full.Usage.CompletionTokens}
	}
	return obj
}

// messageEvents is the streamed form: message_start (input tokens), each
// block started, its deltas (text in two pieces, tool input in three),
// stopped, message_delta (stop reason, output tokens), message_stop.
func messageEvents(req Request, resp Response) [][2]any {
	obj := messageObject(req, resp)
	u, _ := obj["usage"].(map[string]any)
	start := map[string]any{}
	for k, v := range obj {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]any{"input_tokens": u["input_tokens"], "output_tokens": 0}
	events := [][2]any{{"message_start", map[string]any{"type": "message_start", "message": start}}}
	blocks, _ := obj["content"].([]any)
	for i, b := range blocks {
		blk := b.(map[string]any)
		switch blk["type"] {
		case "text":
			events = append(events, [2]any{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}}})
			for _, piece := range split(blk["text"].(string), 2) {
				events = append(events, [2]any{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": piece}}})
			}
		case "tool_use":
			events = append(events, [2]any{"content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}}})
			input, _ := json.Marshal(blk["input"])
			for _, piece := range split(string(input), 3) {
				events = append(events, [2]any{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}}})
			}
		}
		events = append(events, [2]any{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}})
	}
	events = append(events, [2]any{"message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": obj["stop_reason"], "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u["output_tokens"]}}})
	return append(events, [2]any{"message_stop", map[string]any{"type": "message_stop"}})
}

// serveMessages answers a Messages request that is not a fault.
func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request, req Request, resp Response) {
	if !req.Chat.Stream {
		data, _ := json.Marshal(messageObject(req, resp))
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write(data); err == nil && s.script.Delivered != nil {
			s.script.Delivered(req, resp)
		}
		return
	}
	var lines [][]byte
	for _, ev := range messageEvents(req, resp) {
		data, _ := json.Marshal(ev[1])
		lines = append(lines, []byte(fmt.Sprintf("event: %s\ndata: %s", ev[0], data)))
	}
	s.writeEvents(w, r, req, resp, lines)
}
