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

// nextRequestTokens is the size of the next request: the prompt tokens the
// provider reported for the last call plus an estimate of what was appended
// since, or, when no call reported usage, the estimate of the whole
// conversation and the offered tools.
func (s *session) nextRequestTokens(offered []openai.Tool) int {
	if s.reportedPrompt > 0 {
		return s.reportedPrompt + messagesTokens(s.messages[s.reportedLen:])
	}
	return messagesTokens(s.messages) + s.offerTokens(offered)
}

// offerTokens is the estimated size of an offer: a session offers every
// tool or only submit_report.
func (s *session) offerTokens(offered []openai.Tool) int {
	if len(offered) == 1 && offered[0].Function.Name == SubmitReportTool {
		return s.reportDefTokens
	}
	return s.allDefsTokens
}
