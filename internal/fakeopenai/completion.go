package fakeopenai

import (
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// bytesPerToken is the rough estimate behind the default usage numbers.
const bytesPerToken = 4

// The wire shapes of a chat.completion, written out rather than reusing
// go-openai's structs so that the JSON is exactly what providers send
// (content is null beside tool calls, logprobs is present).
type completion struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	Choices           []choice      `json:"choices"`
	Usage             *openai.Usage `json:"usage,omitempty"`
	SystemFingerprint string        `json:"system_fingerprint"`
}

type choice struct {
	Index        int                 `json:"index"`
	Message      message             `json:"message"`
	FinishReason openai.FinishReason `json:"finish_reason"`
	Logprobs     *struct{}           `json:"logprobs"`
}

type message struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func completionFor(req Request, resp Response) completion {
	msg := message{Role: openai.ChatMessageRoleAssistant, ReasoningContent: resp.Reasoning}
	if resp.Content != "" || len(resp.ToolCalls) == 0 {
		content := resp.Content
		msg.Content = &content
	}
	outBytes := len(resp.Content) + len(resp.Reasoning)
	for i, c := range resp.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", req.Index, i)
		}
		msg.ToolCalls = append(msg.ToolCalls, toolCall{
			ID: id, Type: string(openai.ToolTypeFunction),
			Function: functionCall{Name: c.Name, Arguments: c.Arguments},
		})
		outBytes += len(c.Name) + len(c.Arguments)
	}
	finish := resp.FinishReason
	if finish == "" {
		finish = openai.FinishReasonStop
		if len(resp.ToolCalls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
	}
	use := openai.Usage{
		PromptTokens:     req.PromptTokens(),
		CompletionTokens: outBytes/bytesPerToken + 1,
	}
	if resp.Usage != nil {
		use = *resp.Usage
	}
	use.TotalTokens = use.PromptTokens + use.CompletionTokens
	model := req.Chat.Model
	if model == "" {
		model = "fake"
	}
	return completion{
		ID:                fmt.Sprintf("chatcmpl-fake-%d", req.Index),
		Object:            "chat.completion",
		Created:           time.Now().Unix(),
		Model:             model,
		Choices:           []choice{{Message: msg, FinishReason: finish}},
		Usage:             usagePtr(use, resp.NoUsage),
		SystemFingerprint: "fp_fakeopenai",
	}
}

func usagePtr(u openai.Usage, omit bool) *openai.Usage {
	if omit {
		return nil
	}
	return &u
}
