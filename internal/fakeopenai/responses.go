package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// The Responses API (POST /v1/responses). A request is read into the same
// chat shape scripts already look at (Request.Chat: instructions and input
// messages, function calls as assistant tool calls, their outputs as tool
// messages), so every script plays on both wires; the answer goes back as a
// response object, or streamed as its events. Like OpenAI with store off,
// the server refuses a function call sent back without the reasoning item
// (and its encrypted content) that came with it.

// Wire names of Request.Wire.
const (
	WireChat      = "chat"
	WireResponses = "responses"
)

type responsesBody struct {
	Model           string            `json:"model"`
	Input           []json.RawMessage `json:"input"`
	Instructions    string            `json:"instructions"`
	Tools           []responsesTool   `json:"tools"`
	Stream          bool              `json:"stream"`
	Store           *bool             `json:"store"`
	MaxOutputTokens int               `json:"max_output_tokens"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  any             `json:"parameters"`
	Tools       []responsesTool `json:"tools"` // a namespace's (Codex puts MCP tools in one)
}

// namespaced is the name a script sees for a function tool of a namespace.
func namespaced(ns, name string) string { return ns + "__" + name }

type inputItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Namespace        string          `json:"namespace"`
	Output           json.RawMessage `json:"output"`
	ID               string          `json:"id"`
	EncryptedContent string          `json:"encrypted_content"`
}

// decodeResponses reads a Responses body into req.Chat, checking what the
// real API checks.
func (s *Server) decodeResponses(raw []byte, req *Request) error {
	var body responsesBody
	if err := json.Unmarshal(raw, &body); err != nil {
		return err
	}
	req.Wire, req.Store = WireResponses, body.Store
	chat := openai.ChatCompletionRequest{Model: body.Model, Stream: body.Stream, MaxCompletionTokens: body.MaxOutputTokens}
	if body.Instructions != "" {
		chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: body.Instructions})
	}
	for _, t := range body.Tools {
		switch t.Type {
		case "function", "":
			chat.Tools = append(chat.Tools, openai.Tool{Type: openai.ToolType(t.Type),
				Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
		case "namespace":
			for _, in := range t.Tools {
				flat := namespaced(t.Name, in.Name)
				s.mu.Lock()
				s.namespaces[flat] = [2]string{t.Name, in.Name}
				s.mu.Unlock()
				chat.Tools = append(chat.Tools, openai.Tool{Type: openai.ToolTypeFunction,
					Function: &openai.FunctionDefinition{Name: flat, Description: in.Description, Parameters: in.Parameters}})
			}
		}
		// Any other type is a hosted or custom tool (Codex offers
		// web_search): not the script's to call.
	}
	reasoning := map[string]string{} // reasoning items sent: id → encrypted content
	for i, rawItem := range body.Input {
		var it inputItem
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return fmt.Errorf("input[%d]: %v", i, err)
		}
		if err := s.addItem(&chat, it, reasoning); err != nil {
			return fmt.Errorf("input[%d]: %v", i, err)
		}
	}
	req.Chat = chat
	return nil
}

func (s *Server) addItem(chat *openai.ChatCompletionRequest, it inputItem, reasoning map[string]string) error {
	switch it.Type {
	case "reasoning":
		reasoning[it.ID] = it.EncryptedContent
	case "function_call":
		if err := s.checkReasoning(it.CallID, reasoning); err != nil {
			return err
		}
		name := it.Name
		if it.Namespace != "" {
			name = namespaced(it.Namespace, it.Name)
		}
		call := openai.ToolCall{ID: it.CallID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: it.Arguments}}
		last := len(chat.Messages) - 1
		if last >= 0 && chat.Messages[last].Role == openai.ChatMessageRoleAssistant {
			chat.Messages[last].ToolCalls = append(chat.Messages[last].ToolCalls, call)
		} else {
			chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{call}})
		}
	case "function_call_output":
		var out string
		if json.Unmarshal(it.Output, &out) != nil {
			if out = contentText(it.Output); out == "" {
				return fmt.Errorf("function_call_output for %s: output must be a string or content parts", it.CallID)
			}
		}
		chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: it.CallID, Content: out})
	case "message", "":
		role := it.Role
		if role == "developer" {
			role = openai.ChatMessageRoleSystem // the Responses API's instructions role
		}
		chat.Messages = append(chat.Messages, openai.ChatCompletionMessage{Role: role, Content: contentText(it.Content)})
	default:
		return fmt.Errorf("unknown item type %q", it.Type)
	}
	return nil
}

// checkReasoning: a call answered with a reasoning item must come back with
// that item ahead of it.
func (s *Server) checkReasoning(callID string, sent map[string]string) error {
	s.mu.Lock()
	issued, ok := s.reasoningOf[callID]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if enc, found := sent[issued.id]; !found || enc != issued.encrypted {
		return fmt.Errorf("item of type 'function_call' for %s was provided without its required 'reasoning' item: %s", callID, issued.id)
	}
	return nil
}

// issuedReasoning is a reasoning item the server sent with a call.
type issuedReasoning struct{ id, encrypted string }

func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// responseObject is resp as the Responses API returns it.
func (s *Server) responseObject(req Request, resp Response) map[string]any {
	full := completionFor(req, resp)
	msg := full.Choices[0].Message
	var output []any
	if msg.ReasoningContent != "" || resp.Reasoning != "" {
		id := fmt.Sprintf("rs_%d", req.Index)
		enc := fmt.Sprintf("enc-%d-%x", req.Index, len(resp.Reasoning))
		output = append(output, map[string]any{"type": "reasoning", "id": id, "encrypted_content": enc,
			"summary": []any{map[string]any{"type": "summary_text", "text": resp.Reasoning}}})
		s.mu.Lock()
		for _, c := range msg.ToolCalls {
			s.reasoningOf[c.ID] = issuedReasoning{id, enc}
		}
		s.mu.Unlock()
	}
	if msg.Content != nil && *msg.Content != "" {
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", req.Index), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": *msg.Content, "annotations": []any{}}}})
	}
	for i, c := range msg.ToolCalls {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", req.Index, i), "call_id": c.ID,
			"name": c.Function.Name, "arguments": c.Function.Arguments, "status": "completed"}
		s.mu.Lock()
		if ns, ok := s.namespaces[c.Function.Name]; ok {
			item["namespace"], item["name"] = ns[0], ns[1]
		}
		s.mu.Unlock()
		output = append(output, item)
	}
	obj := map[string]any{"id": fmt.Sprintf("resp_fake_%d", req.Index), "object": "response", "created_at": time.Now().Unix(),
		"status": "completed", "model": full.Model, "output": output, "error": nil, "incomplete_details": nil, "store": false}
	if full.Choices[0].FinishReason == openai.FinishReasonLength {
		obj["status"], obj["incomplete_details"] = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	if full.Usage != nil {
		obj["usage"] = map[string]any{"input_tokens": full.Usage.PromptTokens, "output_tokens": full.Usage.CompletionTokens, "total_tokens": full.Usage.TotalTokens}
	}
	return obj
}

// responseEvents is the streamed form: created, each item with its deltas
// (text in two pieces, arguments in three), completed.
func (s *Server) responseEvents(req Request, resp Response) []map[string]any {
	obj := s.responseObject(req, resp)
	events := []map[string]any{{"type": "response.created", "response": map[string]any{"id": obj["id"], "status": "in_progress", "output": []any{}}}}
	for i, item := range obj["output"].([]any) {
		it := item.(map[string]any)
		events = append(events, map[string]any{"type": "response.output_item.added", "output_index": i, "item": it})
		switch it["type"] {
		case "message":
			text := it["content"].([]any)[0].(map[string]any)["text"].(string)
			for _, piece := range split(text, 2) {
				events = append(events, map[string]any{"type": "response.output_text.delta", "output_index": i, "delta": piece})
			}
		case "function_call":
			for _, piece := range split(it["arguments"].(string), 3) {
				events = append(events, map[string]any{"type": "response.function_call_arguments.delta", "output_index": i, "delta": piece})
			}
		}
		events = append(events, map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	final := "response.completed"
	if obj["status"] == "incomplete" {
		final = "response.incomplete"
	}
	return append(events, map[string]any{"type": final, "response": obj})
}

// serveResponses answers a Responses request that is not a fault.
func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request, req Request, resp Response) {
	if !req.Chat.Stream {
		data, _ := json.Marshal(s.responseObject(req, resp))
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write(data); err == nil && s.script.Delivered != nil {
			s.script.Delivered(req, resp)
		}
		return
	}
	var lines [][]byte
	for i, ev := range s.responseEvents(req, resp) {
		ev["sequence_number"] = i
		data, _ := json.Marshal(ev)
		lines = append(lines, data)
	}
	s.writeEvents(w, r, req, resp, lines)
}
