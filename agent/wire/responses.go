package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// The Responses wire (RALPH_WIRE_API=responses): the session still speaks
// chat completions at its seam; each request is converted to a Responses
// request (store: false, so every request carries the whole conversation
// and the prefix stays stable for the provider's cache) and each answer
// back to a chat completion.

// responsesCarry keeps the reasoning items of each answer that called
// tools, by the id of its first call: with store off the API wants them
// sent back ahead of those calls, encrypted content included.
type responsesCarry struct {
	mu        sync.Mutex
	reasoning map[string][]json.RawMessage
}

func newResponsesCarry() *responsesCarry {
	return &responsesCarry{reasoning: map[string][]json.RawMessage{}}
}

func (c *responsesCarry) keep(callID string, items []json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reasoning[callID] = items
}

func (c *responsesCarry) items(callID string) []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reasoning[callID]
}

// respond is one call on the Responses wire, streamed unless streaming is off.
func (m *Client) respond(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	rr := m.responsesRequest(req)
	if !m.cfg.Stream {
		r, err := m.client.CreateResponse(ctx, rr)
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		return m.fromResponse(r)
	}
	stream, err := m.client.CreateResponseStream(ctx, rr)
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	defer stream.Close()
	progress := &streamProgress{emit: m.emit, step: step, model: req.Model, started: time.Now()}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return openai.ChatCompletionResponse{}, errStreamIncomplete
		}
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		switch ev.Type {
		case openai.ResponseStreamEventCompleted, openai.ResponseStreamEventIncomplete, openai.ResponseStreamEventFailed:
			if ev.Response == nil {
				return openai.ChatCompletionResponse{}, errStreamIncomplete
			}
			return m.fromResponse(*ev.Response)
		case openai.ResponseStreamEventError:
			return openai.ChatCompletionResponse{}, responseFailure(ev.Code, ev.Message)
		default:
			progress.add(len(ev.Delta))
		}
	}
}

// responsesRequest converts the session's request.
func (m *Client) responsesRequest(req openai.ChatCompletionRequest) openai.CreateResponseRequest {
	store := false
	rr := openai.CreateResponseRequest{Model: req.Model, Store: &store, Input: m.responsesInput(req.Messages),
		Include: []openai.ResponseInclude{openai.ResponseIncludeReasoningEncryptedContent}}
	rr.MaxOutputTokens = req.MaxCompletionTokens // shapeRequest put the limit there
	if req.ReasoningEffort != "" {
		rr.Reasoning = &openai.ResponseReasoning{Effort: req.ReasoningEffort}
	}
	for _, t := range req.Tools {
		if t.Function != nil {
			rr.Tools = append(rr.Tools, openai.NewResponseFunctionTool(*t.Function))
		}
	}
	return rr
}

// responsesInput is the conversation as Responses input items.
func (m *Client) responsesInput(msgs []openai.ChatCompletionMessage) []any {
	items := make([]any, 0, len(msgs))
	for _, msg := range msgs {
		switch msg.Role {
		case openai.ChatMessageRoleTool:
			items = append(items, openai.ResponseFunctionCallOutput{Type: "function_call_output", CallID: msg.ToolCallID, Output: msg.Content})
		case openai.ChatMessageRoleAssistant:
			if len(msg.ToolCalls) > 0 {
				for _, r := range m.carried.items(msg.ToolCalls[0].ID) {
					items = append(items, r)
				}
			}
			if msg.Content != "" {
				items = append(items, openai.ResponseInputMessage{Type: "message", Role: msg.Role, Content: msg.Content})
			}
			for _, c := range msg.ToolCalls {
				items = append(items, map[string]string{"type": "function_call", "call_id": c.ID, "name": c.Function.Name, "arguments": c.Function.Arguments})
			}
		default:
			items = append(items, openai.ResponseInputMessage{Type: "message", Role: msg.Role, Content: msg.Content})
		}
	}
	return items
}

// fromResponse converts an answer to the chat completion the session reads.
func (m *Client) fromResponse(r openai.CreateResponseResponse) (openai.ChatCompletionResponse, error) {
	if r.Status == openai.ResponseStatusFailed {
		if r.Error != nil {
			return openai.ChatCompletionResponse{}, responseFailure(r.Error.Code, r.Error.Message)
		}
		return openai.ChatCompletionResponse{}, responseFailure("server_error", "the response failed")
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var text, summary strings.Builder
	var reasoning []json.RawMessage
	for _, raw := range r.Output {
		data, err := json.Marshal(raw)
		if err != nil {
			continue
		}
		var item openai.ResponseOutputItem
		if json.Unmarshal(data, &item) != nil {
			continue
		}
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				text.WriteString(c.Text)
				msg.Refusal += c.Refusal
			}
		case "function_call":
			msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: item.CallID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: item.Name, Arguments: item.Arguments}})
		case "reasoning":
			reasoning = append(reasoning, data)
			for _, s := range item.Summary {
				summary.WriteString(s.Text)
			}
		}
	}
	msg.Content, msg.ReasoningContent = text.String(), summary.String()
	if len(msg.ToolCalls) > 0 && len(reasoning) > 0 {
		m.carried.keep(msg.ToolCalls[0].ID, reasoning)
	}
	finish := openai.FinishReasonStop
	switch {
	case r.Status == openai.ResponseStatusIncomplete && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		finish = openai.FinishReasonLength
	case len(msg.ToolCalls) > 0:
		finish = openai.FinishReasonToolCalls
	}
	out := openai.ChatCompletionResponse{ID: r.ID, Object: "chat.completion", Model: r.Model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}}
	if r.Usage != nil {
		out.Usage = openai.Usage{PromptTokens: r.Usage.InputTokens, CompletionTokens: r.Usage.OutputTokens, TotalTokens: r.Usage.TotalTokens}
	}
	return out, nil
}

// responseFailure is a failed response as the API error classify reads:
// the status a chat endpoint would have answered with for its code.
func responseFailure(code, message string) error {
	status := http.StatusInternalServerError
	switch code {
	case contextLengthCode, "invalid_request_error", "invalid_prompt":
		status = http.StatusBadRequest
	case "rate_limit_exceeded", "insufficient_quota":
		status = http.StatusTooManyRequests
	}
	return &openai.APIError{Code: code, Message: message, HTTPStatusCode: status}
}
