// Package wire is the model wire: one model call of a round, sent over the
// chat-completions or Responses API of an OpenAI-compatible provider,
// rewritten for the provider's dialect, retried in place on transient
// trouble, moved to a fallback model when the retries are spent, and ended
// with an error of a known kind. It holds no state of the round: the
// builtin agent (package agent) owns the conversation, the bounds and the
// tools, and calls Client.Complete once per step.
package wire

import (
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
