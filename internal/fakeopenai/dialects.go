package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
)

// Dialects: what real OpenAI-compatible servers send and require, played
// on cue so tests meet each quirk the way users do (docs/reference.md,
// "Providers and their quirks").

// Dialect rewrites a scripted answer's JSON (a whole completion, or each
// chunk of a stream) the way one provider writes it.
type Dialect string

// Answer dialects.
const (
	// ArgumentsObject: function.arguments as a JSON object, not a string
	// (some llama.cpp builds).
	ArgumentsObject Dialect = "arguments-object"
	// ContentParts: content as an array of text parts.
	ContentParts Dialect = "content-parts"
	// GeminiSignatures: each tool call carries
	// extra_content.google.thought_signature, which Gemini wants back.
	GeminiSignatures Dialect = "gemini-signatures"
	// VLLMReasoning: reasoning in "reasoning", not "reasoning_content".
	VLLMReasoning Dialect = "vllm-reasoning"
)

// Strictness makes the server refuse requests the way strict providers do.
type Strictness struct {
	// Mistral: no user message right after a tool message, every tool
	// message names its tool, tool-call ids of nine alphanumerics.
	Mistral bool
	// DeepSeekThinking: once an answer carried reasoning_content, every
	// assistant message must carry the field (even empty).
	DeepSeekThinking bool
	// Gemini: a tool call answered with a thought signature must come back
	// with it.
	Gemini bool
}

var nineAlnum = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

type rawMessage struct {
	Role             string          `json:"role"`
	Name             *string         `json:"name"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []rawToolCall   `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Content          json.RawMessage `json:"content"`
}

type rawToolCall struct {
	ID           string `json:"id"`
	ExtraContent *struct {
		Google struct {
			ThoughtSignature string `json:"thought_signature"`
		} `json:"google"`
	} `json:"extra_content"`
}

// strictRefusal is the 400 a strict provider answers req with, if any.
func (s *Server) strictRefusal(req Request) (string, bool) {
	st := s.script.Strict
	if req.Wire != WireChat || (!st.Mistral && !st.DeepSeekThinking && !st.Gemini) {
		return "", false
	}
	var body struct {
		Messages []rawMessage `json:"messages"`
	}
	if json.Unmarshal(req.Raw, &body) != nil {
		return "", false
	}
	for i, m := range body.Messages {
		if msg, bad := s.strictMessage(st, body.Messages, i, m); bad {
			return msg, true
		}
	}
	return "", false
}

func (s *Server) strictMessage(st Strictness, msgs []rawMessage, i int, m rawMessage) (string, bool) {
	switch {
	case st.Mistral && m.Role == "user" && i > 0 && msgs[i-1].Role == "tool":
		return "Unexpected role 'user' after role 'tool'", true
	case st.Mistral && m.Role == "tool" && (m.Name == nil || *m.Name == ""):
		return fmt.Sprintf("messages[%d]: tool message must carry the name of its function", i), true
	case st.DeepSeekThinking && m.Role == "assistant" && m.ReasoningContent == nil && s.sawReasoning():
		return fmt.Sprintf("Missing `reasoning_content` field in the assistant message at message index %d", i), true
	}
	for _, c := range m.ToolCalls {
		if st.Mistral && !nineAlnum.MatchString(c.ID) {
			return fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", c.ID), true
		}
		if st.Gemini && s.signatureOf(c.ID) != "" && (c.ExtraContent == nil || c.ExtraContent.Google.ThoughtSignature != s.signatureOf(c.ID)) {
			return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts (call %s)", c.ID), true
		}
	}
	return "", false
}

func (s *Server) sawReasoning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reasoningSent
}

func (s *Server) signatureOf(callID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signatures[callID]
}

// applyDialect rewrites one encoded completion or chunk.
func (s *Server) applyDialect(d Dialect, data []byte, choiceKey string) []byte {
	if d == "" {
		return data
	}
	var obj map[string]any
	if json.Unmarshal(data, &obj) != nil {
		return data
	}
	choices, _ := obj["choices"].([]any)
	for _, c := range choices {
		if msg, ok := c.(map[string]any)[choiceKey].(map[string]any); ok {
			s.rewriteMessage(d, msg)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

func (s *Server) rewriteMessage(d Dialect, msg map[string]any) {
	switch d {
	case ContentParts:
		if text, ok := msg["content"].(string); ok && text != "" {
			msg["content"] = []any{map[string]any{"type": "text", "text": text}}
		}
	case VLLMReasoning:
		if r, ok := msg["reasoning_content"]; ok {
			msg["reasoning"] = r
			delete(msg, "reasoning_content")
		}
	}
	calls, _ := msg["tool_calls"].([]any)
	for _, c := range calls {
		call := c.(map[string]any)
		fn, _ := call["function"].(map[string]any)
		switch d {
		case ArgumentsObject:
			if args, ok := fn["arguments"].(string); ok {
				var v any
				if json.Unmarshal([]byte(args), &v) == nil {
					fn["arguments"] = v
				}
			}
		case GeminiSignatures:
			if id, ok := call["id"].(string); ok && id != "" {
				sig := "sig-" + id
				call["extra_content"] = map[string]any{"google": map[string]any{"thought_signature": sig}}
				s.mu.Lock()
				s.signatures[id] = sig
				s.mu.Unlock()
			}
		}
	}
}

// ToolUseFailed is Groq's 400 for an answer of the model's own that did not
// parse as a tool call.
func ToolUseFailed(failedGeneration string) Response {
	data, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
		"type":    "invalid_request_error", "code": "tool_use_failed", "failed_generation": failedGeneration}})
	return Response{Fault: Fault{Status: http.StatusBadRequest, Body: string(data)}}
}

// Raw answers with exactly this status and JSON body (a 200 whose body is
// an error object, for one).
func Raw(status int, body string) Response {
	return Response{Fault: Fault{Status: status, Body: body}}
}

// TextCall is a tool call written as text in content: "bare" JSON, in a
// "fence" (```json), or in "tags" (<tool_call>…</tool_call>).
func TextCall(style string, c Call) Response {
	var args any
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		panic(fmt.Sprintf("fakeopenai: TextCall arguments of %s: %v", c.Name, err))
	}
	data, _ := json.Marshal(map[string]any{"name": c.Name, "arguments": args})
	switch style {
	case "fence":
		return Text("I will call the tool now.\n```json\n" + string(data) + "\n```")
	case "tags":
		return Text("<tool_call>\n" + string(data) + "\n</tool_call>")
	}
	return Text(string(data))
}
