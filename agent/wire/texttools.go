package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Tool calls written as text: servers whose tool parser missed (Ollama with
// some models, vLLM, llama.cpp, LM Studio) put the call in content, bare, in
// a code fence or in <tool_call> tags.
var (
	toolCallTags = regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)
	codeFences   = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*\\n?(.*?)```")
)

// textCall is one call as such servers write it ("parameters" is the
// Llama spelling of "arguments").
type textCall struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

// settleAnswer finishes an answer the way the session can use it: a tool
// call written as text becomes that call, and every call has a unique id
// (generated ones are nine alphanumerics, the form Mistral accepts).
func settleAnswer(resp *openai.ChatCompletionResponse, offered []openai.Tool) {
	if len(resp.Choices) == 0 {
		return
	}
	msg := &resp.Choices[0].Message
	if len(msg.ToolCalls) == 0 && resp.Choices[0].FinishReason != openai.FinishReasonLength {
		if calls := textToolCalls(msg.Content, offered); calls != nil {
			msg.ToolCalls, msg.Content = calls, ""
			resp.Choices[0].FinishReason = openai.FinishReasonToolCalls
		}
	}
	seen := map[string]bool{}
	for i := range msg.ToolCalls {
		c := &msg.ToolCalls[i]
		if c.ID == "" || seen[c.ID] {
			c.ID = newCallID()
		}
		seen[c.ID] = true
		if c.Type == "" {
			c.Type = openai.ToolTypeFunction
		}
	}
}

// textToolCalls reads content as tool calls when all of it that is JSON
// names offered tools; nil when it is an ordinary text answer.
func textToolCalls(content string, offered []openai.Tool) []openai.ToolCall {
	if !strings.ContainsAny(content, "{") {
		return nil
	}
	var pieces []string
	for _, re := range []*regexp.Regexp{toolCallTags, codeFences} {
		for _, m := range re.FindAllStringSubmatch(content, -1) {
			pieces = append(pieces, m[1])
		}
		if pieces != nil {
			break
		}
	}
	if pieces == nil {
		pieces = []string{content}
	}
	names := map[string]bool{}
	for _, t := range offered {
		if t.Function != nil {
			names[t.Function.Name] = true
		}
	}
	var calls []openai.ToolCall
	for _, p := range pieces {
		parsed, ok := parseTextCalls(p, names)
		if !ok {
			return nil
		}
		calls = append(calls, parsed...)
	}
	return calls
}

// parseTextCalls reads one JSON object or list of objects as calls of
// offered tools.
func parseTextCalls(text string, names map[string]bool) ([]openai.ToolCall, bool) {
	text = strings.TrimSpace(text)
	var list []textCall
	if strings.HasPrefix(text, "[") {
		if json.Unmarshal([]byte(text), &list) != nil {
			return nil, false
		}
	} else {
		var one textCall
		if json.Unmarshal([]byte(text), &one) != nil {
			return nil, false
		}
		list = []textCall{one}
	}
	if len(list) == 0 {
		return nil, false
	}
	calls := make([]openai.ToolCall, 0, len(list))
	for _, c := range list {
		if !names[c.Name] {
			return nil, false
		}
		args := c.Arguments
		if len(args) == 0 {
			args = c.Parameters
		}
		calls = append(calls, openai.ToolCall{Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: argumentsText(args)}})
	}
	return calls, true
}

// argumentsText is arguments as the JSON text a tool call carries: an
// object as written, a string as its contents.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "{}"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newCallID is a fresh tool-call id of nine alphanumerics.
func newCallID() string {
	b := make([]byte, 9)
	for i := range b {
		b[i] = idAlphabet[rand.N(len(idAlphabet))]
	}
	return string(b)
}
