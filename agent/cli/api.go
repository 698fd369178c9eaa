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
	// outputFields name the answer's token limit (the first is set when
	// a request names none).
	outputFields []string
}

// streamReader reads a streamed answer event by event (the data of each
// server-sent event, or a whole JSON answer).
type streamReader interface {
	// event takes one event; final reports the answer's last event (the
	// usage is complete before it is passed on).
	event(data []byte) (final bool)
	result() answerRead
	// calls are the tool calls read so far (complete once final).
	calls() []toolCall
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
	}, newReader: func() streamReader { return &chatReader{} }, outputFields: []string{"max_completion_tokens", "max_tokens"}},
	APIResponses: {path: "/responses", provider: "openai", prepare: func(map[string]json.RawMessage) {},
		reportOnly: func(b map[string]json.RawMessage, tool, notice string) {
			b["tools"] = keepNamespacedTools(b["tools"], tool)
			delete(b, "tool_choice")
			b["input"] = appendItem(b["input"], map[string]any{"type": "message", "role": "user",
				"content": []map[string]string{{"type": "input_text", "text": notice}}})
		}, newReader: func() streamReader { return &responsesReader{} }, outputFields: []string{"max_output_tokens"}},
	APIMessages: {path: "/messages", provider: "anthropic", prepare: func(map[string]json.RawMessage) {},
		reportOnly: func(b map[string]json.RawMessage, tool, notice string) {
			b["tools"] = keepTools(b["tools"], tool, func(t map[string]json.RawMessage) string { return str(t["name"]) })
			delete(b, "tool_choice")
			b["messages"] = appendAnthropicText(b["messages"], notice)
		}, newReader: func() streamReader { return &messagesReader{} }, outputFields: []string{"max_tokens"}},
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
// whole answer; tool calls in pieces (delta) or whole (message).
type chatReader struct {
	r     answerRead
	parts callParts
}

// chatCall is a tool call of a chunk's delta or of a whole message.
type chatCall struct {
	Index    int `json:"index"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

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
			Index  int    `json:"index"`
			Finish string `json:"finish_reason"`
			Delta  struct {
				ToolCalls []chatCall `json:"tool_calls"`
			} `json:"delta"`
			Message struct {
				ToolCalls []chatCall `json:"tool_calls"`
			} `json:"message"`
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
		for i, tc := range append(ch.Delta.ToolCalls, ch.Message.ToolCalls...) {
			if len(ch.Message.ToolCalls) > 0 {
				tc.Index = i
			}
			c.parts.add(ch.Index<<16|tc.Index, tc.Function.Name, tc.Function.Arguments)
		}
	}
	if chunk.Usage != nil {
		c.r.usage.PromptTokens, c.r.usage.CompletionTokens = chunk.Usage.Prompt, chunk.Usage.Completion
	}
	return chunk.Object == "chat.completion" // a whole answer
}

func (c *chatReader) result() answerRead { return c.r }

func (c *chatReader) calls() []toolCall { return c.parts.calls() }

// responsesReader: usage in response.completed (or a whole response);
// tool calls as function_call items, each whole in output_item.done and
// all of them in the final response's output.
type responsesReader struct {
	r     answerRead
	done  []toolCall // from response.output_item.done
	final []toolCall // from the final response's output
}

// responsesItem is an output item (only function calls matter).
type responsesItem struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (it responsesItem) call() (toolCall, bool) {
	return toolCall{name: it.Name, args: it.Arguments}, it.Type == "function_call"
}

func (c *responsesReader) event(data []byte) bool {
	var ev struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
		Object   string          `json:"object"`
		Item     responsesItem   `json:"item"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	resp := ev.Response
	if ev.Type == "response.output_item.done" {
		if tc, ok := ev.Item.call(); ok {
			c.done = append(c.done, tc)
		}
		return false
	}
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
		Output []responsesItem `json:"output"`
	}
	_ = json.Unmarshal(resp, &r)
	c.r = answerRead{usage: usage.Usage{PromptTokens: r.Usage.Input, CompletionTokens: r.Usage.Output}, model: r.Model, finish: r.Status}
	for _, it := range r.Output {
		if tc, ok := it.call(); ok {
			c.final = append(c.final, tc)
		}
	}
	return true
}

func (c *responsesReader) result() answerRead { return c.r }

func (c *responsesReader) calls() []toolCall {
	if len(c.final) > 0 {
		return c.final
	}
	return c.done
}

// messagesReader: input tokens in message_start, output tokens (a running
// total) in message_delta, the end at message_stop; a tool_use block's
// input in input_json_delta pieces (or whole, in its start or in a whole
// answer).
type messagesReader struct {
	r      answerRead
	parts  callParts
	inputs map[int]string // a block's input as its start gave it
}

// messagesBlock is a content block (only tool_use matters).
type messagesBlock struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

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
		Usage *counts       `json:"usage"`
		Index int           `json:"index"`
		Block messagesBlock `json:"content_block"`
		// a whole (not streamed) answer
		Model      string          `json:"model"`
		StopReason string          `json:"stop_reason"`
		Content    []messagesBlock `json:"content"`
	}
	var piece struct {
		Delta struct {
			Type    string `json:"type"`
			Partial string `json:"partial_json"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return false
	}
	switch ev.Type {
	case "content_block_start":
		if ev.Block.Type == "tool_use" {
			c.parts.add(ev.Index, ev.Block.Name, "")
			if c.inputs == nil {
				c.inputs = map[int]string{}
			}
			c.inputs[ev.Index] = string(ev.Block.Input)
		}
	case "content_block_delta":
		if _, ok := c.inputs[ev.Index]; ok && json.Unmarshal(data, &piece) == nil && piece.Delta.Type == "input_json_delta" {
			c.parts.add(ev.Index, "", piece.Delta.Partial)
		}
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
		c.inputs = map[int]string{}
		for i, b := range ev.Content {
			if b.Type == "tool_use" {
				c.parts.add(i, b.Name, "")
				c.inputs[i] = string(b.Input)
			}
		}
		if ev.Usage != nil {
			c.r.usage.PromptTokens = ev.Usage.Input + ev.Usage.CacheRead + ev.Usage.CacheCreate
			c.r.usage.CompletionTokens = ev.Usage.Output
		}
		return true
	}
	return false
}

func (c *messagesReader) result() answerRead { return c.r }

// calls: a block whose input came in no piece has the input its start
// (or the whole answer) gave.
func (c *messagesReader) calls() []toolCall {
	out := c.parts.calls()
	for k, i := range c.parts.order {
		if out[k].args == "" {
			out[k].args = c.inputs[i]
		}
	}
	return out
}
