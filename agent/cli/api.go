package cli

import (
	"encoding/json"
	"strings"

	"github.com/ralph-temporal/ralph/usage"
)

// What the gateway must know of each API: where requests go, how a
// forced hand-off is applied to a request, and how the usage and the end
// of a streamed answer are read. A new API is one more apiSpec here and a
// dialect for the scripted server (internal/fakeopenai).

type apiSpec struct {
	// path is the request path below the base URL's /v1.
	path string
	// provider is gen_ai.provider.name of its spans.
	provider string
	// prepare makes a request report what the gateway must read (usage in
	// the stream).
	prepare func(body map[string]json.RawMessage)
	// reportOnly keeps only the tool whose name ends in tool and appends the
	// hand-off notice as the user's.
	reportOnly func(body map[string]json.RawMessage, tool, notice string)
	// newReader reads one streamed answer.
	newReader func() streamReader
}

// streamReader reads a streamed answer event by event (the data of each
// server-sent event, or a whole JSON answer).
type streamReader interface {
	// event takes one event; final reports the answer's last event (the
	// usage is complete before it is passed on).
	event(data []byte) (final bool)
	result() answerRead
}

// answerRead is what the gateway learnt of one answer.
type answerRead struct {
	usage  usage.Usage
	model  string
	finish string
}

var apis = map[API]apiSpec{
	APIChat: {path: "/chat/completions", provider: "openai", prepare: func(b map[string]json.RawMessage) {
		if string(b["stream"]) == "true" {
			b["stream_options"] = json.RawMessage(`{"include_usage":true}`)
		}
	}, reportOnly: func(b map[string]json.RawMessage, tool, notice string) {
		b["tools"] = keepTools(b["tools"], tool, func(t map[string]json.RawMessage) string { return nested(t, "function", "name") })
		delete(b, "tool_choice")
		b["messages"] = appendItem(b["messages"], map[string]any{"role": "user", "content": notice})
	}, newReader: func() streamReader { return &chatReader{} }},
	APIResponses: {path: "/responses", provider: "openai", prepare: func(map[string]json.RawMessage) {},
		reportOnly: func(b map[string]json.RawMessage, tool, notice string) {
			b["tools"] = keepNamespacedTools(b["tools"], tool)
			delete(b, "tool_choice")
			b["input"] = appendItem(b["input"], map[string]any{"type": "message", "role": "user",
				"content": []map[string]string{{"type": "input_text", "text": notice}}})
		}, newReader: func() streamReader { return &responsesReader{} }},
	APIMessages: {path: "/messages", provider: "anthropic", prepare: func(map[string]json.RawMessage) {},
		reportOnly: func(b map[string]json.RawMessage, tool, notice string) {
			b["tools"] = keepTools(b["tools"], tool, func(t map[string]json.RawMessage) string { return str(t["name"]) })
			delete(b, "tool_choice")
			b["messages"] = appendAnthropicText(b["messages"], notice)
		}, newReader: func() streamReader { return &messagesReader{} }},
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func nested(m map[string]json.RawMessage, key, inner string) string {
	var in map[string]json.RawMessage
	_ = json.Unmarshal(m[key], &in)
	return str(in[inner])
}

// keepTools keeps the tools whose name ends in tool (an MCP tool's name
// carries its server's prefix: mcp__ralph__submit_report, ralph_submit_report).
func keepTools(raw json.RawMessage, tool string, name func(map[string]json.RawMessage) string) json.RawMessage {
	var all []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &all)
	kept := []map[string]json.RawMessage{}
	for _, t := range all {
		if strings.HasSuffix(name(t), tool) {
			kept = append(kept, t)
		}
	}
	out, _ := json.Marshal(kept)
	return out
}

// keepNamespacedTools is keepTools for the Responses API, where a
// namespace tool holds others (Codex puts each MCP server's in one).
func keepNamespacedTools(raw json.RawMessage, tool string) json.RawMessage {
	byName := func(t map[string]json.RawMessage) string { return str(t["name"]) }
	var all []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &all)
	kept := []map[string]json.RawMessage{}
	for _, t := range all {
		if str(t["type"]) == "namespace" {
			inner := keepTools(t["tools"], tool, byName)
			if string(inner) != "[]" {
				t["tools"] = inner
				kept = append(kept, t)
			}
		} else if strings.HasSuffix(byName(t), tool) {
			kept = append(kept, t)
		}
	}
	out, _ := json.Marshal(kept)
	return out
}

func appendItem(raw json.RawMessage, item any) json.RawMessage {
	var items []json.RawMessage
	_ = json.Unmarshal(raw, &items)
	b, _ := json.Marshal(item)
	out, _ := json.Marshal(append(items, b))
	return out
}

// appendAnthropicText adds the notice as the user's: to the last user turn
// (which answers tool calls) when there is one at the end, since Messages
// wants the roles to alternate.
func appendAnthropicText(raw json.RawMessage, text string) json.RawMessage {
	var msgs []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &msgs)
	block := map[string]string{"type": "text", "text": text}
	if n := len(msgs); n > 0 && str(msgs[n-1]["role"]) == "user" {
		var blocks []json.RawMessage
		if err := json.Unmarshal(msgs[n-1]["content"], &blocks); err != nil {
			first, _ := json.Marshal(map[string]string{"type": "text", "text": str(msgs[n-1]["content"])})
			blocks = []json.RawMessage{first}
		}
		b, _ := json.Marshal(block)
		msgs[n-1]["content"], _ = json.Marshal(append(blocks, b))
		out, _ := json.Marshal(msgs)
		return out
	}
	return appendItem(raw, map[string]any{"role": "user", "content": []map[string]string{block}})
}

// chatReader: usage in the chunk before [DONE] (stream_options), or in a
// whole answer.
type chatReader struct{ r answerRead }

func (c *chatReader) event(data []byte) bool {
	if strings.TrimSpace(string(data)) == "[DONE]" {
		return true
	}
	var chunk struct {
		Model string `json:"model"`
		Usage *struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
		Choices []struct {
			Finish string `json:"finish_reason"`
		} `json:"choices"`
		Object string `json:"object"`
	}
	if json.Unmarshal(data, &chunk) != nil {
		return false
	}
	if chunk.Model != "" {
		c.r.model = chunk.Model
	}
	for _, ch := range chunk.Choices {
		if ch.Finish != "" {
			c.r.finish = ch.Finish
		}
	}
	if chunk.Usage != nil {
		c.r.usage.PromptTokens, c.r.usage.CompletionTokens = chunk.Usage.Prompt, chunk.Usage.Completion
	}
	return chunk.Object == "chat.completion" // a whole answer
}

func (c *chatReader) result() answerRead { return c.r }

// responsesReader: usage in response.completed (or a whole response).
type responsesReader struct{ r answerRead }

func (c *responsesReader) event(data []byte) bool {
	var ev struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
		Object   string          `json:"object"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	resp := ev.Response
	if ev.Object == "response" {
		resp = data
	} else if ev.Type != "response.completed" && ev.Type != "response.incomplete" {
		return false
	}
	var r struct {
		Model  string `json:"model"`
		Status string `json:"status"`
		Usage  struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(resp, &r)
	c.r = answerRead{usage: usage.Usage{PromptTokens: r.Usage.Input, CompletionTokens: r.Usage.Output}, model: r.Model, finish: r.Status}
	return true
}

func (c *responsesReader) result() answerRead { return c.r }

// messagesReader: input tokens in message_start, output tokens (a running
// total) in message_delta, the end at message_stop.
type messagesReader struct{ r answerRead }

func (c *messagesReader) event(data []byte) bool {
	type counts struct {
		Input       int `json:"input_tokens"`
		Output      int `json:"output_tokens"`
		CacheRead   int `json:"cache_read_input_tokens"`
		CacheCreate int `json:"cache_creation_input_tokens"`
	}
	var ev struct {
		Type    string `json:"type"`
		Message struct {
			Model string `json:"model"`
			Usage counts `json:"usage"`
		} `json:"message"`
		Delta struct {
			Stop string `json:"stop_reason"`
		} `json:"delta"`
		Usage *counts `json:"usage"`
		// a whole (not streamed) answer
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		c.r.model = ev.Message.Model
		c.r.usage.PromptTokens = u.Input + u.CacheRead + u.CacheCreate
		c.r.usage.CompletionTokens = u.Output
	case "message_delta":
		if ev.Usage != nil {
			c.r.usage.CompletionTokens = ev.Usage.Output
		}
		c.r.finish = ev.Delta.Stop
	case "message_stop":
		return true
	case "message":
		c.r.model, c.r.finish = ev.Model, ev.StopReason
		if ev.Usage != nil {
			c.r.usage.PromptTokens = ev.Usage.Input + ev.Usage.CacheRead + ev.Usage.CacheCreate
			c.r.usage.CompletionTokens = ev.Usage.Output
		}
		return true
	}
	return false
}

func (c *messagesReader) result() answerRead { return c.r }
