package agent

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// shapeRequest sets what the deployment's settings add to every request:
// the output limit under the field the model reads (OpenAI's reasoning
// models refuse max_tokens, most other servers only read it) and the
// reasoning effort.
func shapeRequest(req *openai.ChatCompletionRequest, cfg Config) {
	if req.MaxTokens > 0 && completionTokensField(cfg, req.Model) { //lint:ignore SA1019 the field every OpenAI-compatible server reads
		req.MaxCompletionTokens, req.MaxTokens = req.MaxTokens, 0 //lint:ignore SA1019 moved to the newer field
	}
	req.ReasoningEffort = cfg.ReasoningEffort
}

// completionTokensField: the output limit goes as max_completion_tokens.
func completionTokensField(cfg Config, model string) bool {
	switch cfg.MaxTokensFieldName {
	case MaxCompletionTokensField:
		return true
	case MaxTokensField:
		return false
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// truncationRatio: a provider that counts fewer than this share of the
// estimated prompt dropped part of it (Ollama cuts silently at its default
// context of 2048 or 4096 tokens).
const truncationRatio = 0.75

// checkTruncation catches a provider that reports far fewer prompt tokens
// than were sent: it warns once per session, naming the setting to raise,
// and boundsPrompt keeps the larger figure for the bounds (the provider's
// own count of a truncated prompt would hide that the context is full); the
// usage stays what the provider counted.
func (m *modelClient) checkTruncation(step int, req openai.ChatCompletionRequest, resp *openai.ChatCompletionResponse) {
	reported := resp.Usage.PromptTokens
	m.boundsPrompt = reported
	if reported == 0 {
		return
	}
	estimate := messagesTokens(req.Messages) + toolsTokens(req.Tools)
	if float64(reported) >= truncationRatio*float64(estimate) {
		return
	}
	if !m.truncationWarned {
		m.truncationWarned = true
		m.emit(Event{Kind: EventModelWarning, Step: step, Model: req.Model, Error: fmt.Sprintf(
			"the provider counted %d prompt tokens for a request of about %d: it probably truncated the prompt to a small context "+
				"(Ollama: raise OLLAMA_CONTEXT_LENGTH on the server to at least RALPH_CONTEXT_TOKENS); the estimate drives the context bounds", reported, estimate)})
	}
	m.boundsPrompt = estimate
}
