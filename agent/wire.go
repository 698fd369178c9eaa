package agent

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// shapeRequest sets what the deployment's settings add to every request:
// the output limit and the reasoning effort. The limit always goes in
// max_completion_tokens here (go-openai refuses max_tokens for OpenAI's
// reasoning models); the dialect layer sends it under the name the model
// reads (outputLimitField).
func shapeRequest(req *openai.ChatCompletionRequest, cfg Config) {
	//lint:ignore SA1019 the session sets the field every OpenAI-compatible server reads; it moves to the newer one here
	if limit := req.MaxTokens; limit > 0 {
		//lint:ignore SA1019 cleared: the limit travels in MaxCompletionTokens
		req.MaxCompletionTokens, req.MaxTokens = limit, 0
	}
	req.ReasoningEffort = cfg.ReasoningEffort
}

// outputLimitField is the field the output limit goes in: the setting's,
// else max_completion_tokens for OpenAI's reasoning models (which refuse
// max_tokens) and max_tokens for every other model (vLLM, Ollama, DeepSeek
// and llama.cpp read only it, several refuse the newer name).
func outputLimitField(setting, model string) string {
	if setting != "" {
		return setting
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return MaxCompletionTokensField
		}
	}
	return MaxTokensField
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
