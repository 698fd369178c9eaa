package wire

import (
	"net/http"
	"strings"
)

// contextLengthCode is the error code OpenAI (and Groq, Azure, OpenRouter)
// put on a request that does not fit the model's context.
const contextLengthCode = "context_length_exceeded"

// llamaCppContextType is the error type llama.cpp's server uses for the same.
const llamaCppContextType = "exceed_context_size_error"

// contextLengthPhrases are lower-cased fragments of the messages providers
// send, with HTTP 400, for a prompt too long for the context. Where they
// were found (real responses quoted in public code and issue threads):
//   - OpenAI: "This model's maximum context length is 8192 tokens. However,
//     your messages resulted in 8245 tokens. Please reduce the length of the
//     messages." (code context_length_exceeded; quoted in
//     FoundationAgents/OpenManus#62), and for newer models "Input tokens
//     exceed the configured limit of 272000 tokens."
//   - DeepSeek: "This model's maximum context length is 65536 tokens.
//     However, you requested 66343 tokens (62247 in the messages, 4096 in the
//     completion). Please reduce the length of the messages or completion."
//     (code invalid_request_error; FoundationAgents/OpenManus#79,
//     bytedance/deer-flow#66).
//   - vLLM: the same "maximum context length ... However, you requested"
//     text from its OpenAI server's serving_engine.py (type BadRequestError,
//     code 400), newer: "'max_tokens' or 'max_completion_tokens' is too
//     large: 8000. This model's maximum context length is 4096 tokens and
//     your request has 2778 input tokens", and from the engine "The decoder
//     prompt (length 5000) is longer than the maximum model length of 4096".
//   - Ollama: {"error":"the input length exceeds the context length"} (its
//     OpenAI endpoint with truncation off; quoted in ollama integrations).
//   - llama.cpp server: "the request exceeds the available context size, try
//     increasing it", newer "request (4476 tokens) exceeds the available
//     context size (4096 tokens)" (type exceed_context_size_error).
//   - SGLang: "The input (5000 tokens) is longer than the model's context
//     length (4096 tokens)."; Gemini's OpenAI endpoint: "The input token
//     count (1200000) exceeds the maximum number of tokens allowed
//     (1048576)."; xAI: "This model's maximum prompt length is 131072 but
//     the request contains 140000 tokens."; Groq answers 413 for the same.
//   - and the generic "prompt is too long" / "too many tokens" wording of
//     proxies and other servers.
var contextLengthPhrases = []string{
	"maximum context length",
	"context_length_exceeded",
	"exceeds the context length",
	"exceeds the available context size",
	"exceed_context_size_error",
	"longer than the maximum model length",
	"input tokens exceed the configured limit",
	"prompt is too long",
	"too many tokens",
	"longer than the model's context length",
	"exceeds the maximum number of tokens allowed",
	"maximum prompt length",
}

// isContextLength reports whether a refused call said the request does not
// fit the model's context: HTTP 413, or HTTP 400 with the OpenAI code,
// llama.cpp's type or one of the known phrasings.
func isContextLength(f modelFailure) bool {
	if f.status == http.StatusRequestEntityTooLarge {
		return true
	}
	if f.status != http.StatusBadRequest {
		return false
	}
	if f.code == contextLengthCode || f.typ == llamaCppContextType {
		return true
	}
	text := strings.ToLower(f.text)
	for _, p := range contextLengthPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}
