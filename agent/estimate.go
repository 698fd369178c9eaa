package agent

import (
	"encoding/json"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// Token estimates stand in where the provider has not counted: about four
// code points per token, rounded up, plus a few tokens of framing per message
// (role and separators, as chat templates add them).
const (
	charsPerToken         = 4
	messageOverheadTokens = 4
)

// EstimateTokens is the estimate of text's size in tokens.
func EstimateTokens(text string) int {
	n := utf8.RuneCountInString(text)
	return (n + charsPerToken - 1) / charsPerToken
}

// messageTokens estimates one message as it is sent.
func messageTokens(m openai.ChatCompletionMessage) int {
	n := messageOverheadTokens + EstimateTokens(m.Content) + EstimateTokens(m.ReasoningContent)
	for _, c := range m.ToolCalls {
		n += EstimateTokens(c.ID) + EstimateTokens(c.Function.Name) + EstimateTokens(c.Function.Arguments)
	}
	return n
}

func messagesTokens(msgs []openai.ChatCompletionMessage) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

// toolsTokens estimates the tool definitions as they are sent (JSON).
func toolsTokens(defs []openai.Tool) int {
	data, err := json.Marshal(defs)
	if err != nil {
		return 0
	}
	return EstimateTokens(string(data))
}

// nextRequestTokens is the size of the next request with offered (see
// conversation.tokens).
func (s *session) nextRequestTokens(offered []openai.Tool) int {
	return s.conv.tokens(s.tools.offerTokens(offered))
}

// finishingRequestTokens is the size of the next request offering only
// the finishing tool, as the hand-off notice states it.
func (s *session) finishingRequestTokens() int {
	return s.nextRequestTokens(s.tools.offered(true))
}

// budgetLeft is what this round may still spend of the run's token budget.
func (r *round) budgetLeft() int {
	return r.bounds.budgetLeft(r.usage.Tokens())
}
