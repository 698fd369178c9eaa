package agent

import (
	"slices"

	openai "github.com/sashabaranov/go-openai"
)

// conversation is a session's messages as the model is sent them, what of
// them the transcript has shown, and what the provider said they cost. It
// is only ever appended to, except by the one compaction.
type conversation struct {
	messages []openai.ChatCompletionMessage
	sent     int  // messages already shown in an earlier model_request event
	defsSent bool // tool definitions already in the transcript

	// reportedPrompt is the prompt tokens the provider reported for the last
	// call, which sent the first reportedLen messages (0: none reported).
	reportedPrompt, reportedLen int
	callLog                     []string // "name arguments" of every tool call, for compaction
}

// bridgeTurn is the one-line assistant turn put between a tool (or user)
// message and a user message the session adds: Mistral refuses a user
// message right after a tool message, and several chat templates two user
// messages in a row.
const bridgeTurn = "Noted."

func (c *conversation) appendUser(text string) {
	if n := len(c.messages); n > 0 && c.messages[n-1].Role != openai.ChatMessageRoleAssistant && c.messages[n-1].Role != openai.ChatMessageRoleSystem {
		c.messages = append(c.messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: bridgeTurn})
	}
	c.messages = append(c.messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
}

// appendToolResult answers the tool call callID.
func (c *conversation) appendToolResult(callID, content string) {
	c.messages = append(c.messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: callID, Content: content})
}

// logCall remembers a tool call for the compacted request's list.
func (c *conversation) logCall(name, args string) {
	c.callLog = append(c.callLog, name+" "+canonicalJSON(args))
}

// unsent is a copy of the messages no event has shown yet, now counted as
// shown.
func (c *conversation) unsent() []openai.ChatCompletionMessage {
	out := slices.Clone(c.messages[c.sent:])
	c.sent = len(c.messages)
	return out
}

// answered appends the model's answer to a request that sent sentLen
// messages, for which the provider reported promptTokens (0: none); the
// answer itself is shown by the model_response event.
func (c *conversation) answered(answer openai.ChatCompletionMessage, sentLen, promptTokens int) {
	if promptTokens > 0 {
		c.reportedPrompt, c.reportedLen = promptTokens, sentLen
	} else {
		c.reportedPrompt, c.reportedLen = 0, 0
	}
	c.messages = append(c.messages, answer)
	c.sent = len(c.messages)
}

// tokens is the size of the next request: the prompt tokens the provider
// reported for the last call plus an estimate of what was appended since,
// or, when no call reported usage, the estimate of the whole conversation
// plus offerTokens, the estimate of the offered tools.
func (c *conversation) tokens(offerTokens int) int {
	if c.reportedPrompt > 0 {
		return c.reportedPrompt + messagesTokens(c.messages[c.reportedLen:])
	}
	return messagesTokens(c.messages) + offerTokens
}

// restart keeps only the first keep messages (the prompts): what the
// provider reported and what the transcript showed no longer apply.
func (c *conversation) restart(keep int) {
	c.messages = slices.Clip(c.messages[:keep])
	c.reportedPrompt, c.reportedLen, c.sent = 0, 0, 0
}
