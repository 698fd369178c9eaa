package fakeopenai

import (
	"encoding/json"
	"net/http"
)

// ContextStyle picks which provider's context-length refusal the server
// answers with: each is the body that provider sends with HTTP 400.
type ContextStyle string

// Context-length refusals as real providers phrase them.
const (
	// ContextOpenAI: code context_length_exceeded.
	ContextOpenAI ContextStyle = "openai"
	// ContextDeepSeek: the message only, code invalid_request_error.
	ContextDeepSeek ContextStyle = "deepseek"
	// ContextVLLM: vLLM's OpenAI server (type BadRequestError, code 400).
	ContextVLLM ContextStyle = "vllm"
	// ContextOllama: {"error": "<text>"}, not an OpenAI error object.
	ContextOllama ContextStyle = "ollama"
	// ContextLlamaCpp: llama.cpp's server, type exceed_context_size_error.
	ContextLlamaCpp ContextStyle = "llamacpp"
	// ContextSGLang, ContextGemini, ContextXAI: those providers' phrasings
	// (HTTP 400); ContextGroq: HTTP 413.
	ContextSGLang ContextStyle = "sglang"
	ContextGemini ContextStyle = "gemini"
	ContextXAI    ContextStyle = "xai"
	ContextGroq   ContextStyle = "groq"
)

// ContextLengthExceeded is the 400 a provider of the given style sends for a
// request longer than its context.
func ContextLengthExceeded(style ContextStyle) Response {
	var body any
	switch style {
	case ContextDeepSeek:
		body = map[string]any{"error": map[string]any{
			"message": "This model's maximum context length is 65536 tokens. However, you requested 66343 tokens (62247 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.",
			"type":    "invalid_request_error", "param": nil, "code": "invalid_request_error"}}
	case ContextVLLM:
		body = map[string]any{"error": map[string]any{
			"message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
			"type":    "BadRequestError", "param": nil, "code": 400}}
	case ContextOllama:
		body = map[string]any{"error": "the input length exceeds the context length"}
	case ContextLlamaCpp:
		body = map[string]any{"error": map[string]any{"code": 400,
			"message": "request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it",
			"type":    "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}
	case ContextSGLang:
		body = map[string]any{"object": "error", "message": "The input (5000 tokens) is longer than the model's context length (4096 tokens).",
			"type": "BadRequestError", "param": nil, "code": 400}
	case ContextGemini:
		body = []any{map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT",
			"message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}}}
	case ContextXAI:
		body = map[string]any{"code": "Client specified an invalid argument",
			"error": "This model's maximum prompt length is 131072 but the request contains 140000 tokens."}
	case ContextGroq:
		data, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "Request too large for model: tokens per minute limit exceeded",
			"type": "tokens", "code": "rate_limit_exceeded"}})
		return Response{Fault: Fault{Status: http.StatusRequestEntityTooLarge, Body: string(data)}}
	default:
		body = map[string]any{"error": map[string]any{
			"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 8245 tokens. Please reduce the length of the messages.",
			"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
	}
	data, _ := json.Marshal(body)
	return Response{Fault: Fault{Status: http.StatusBadRequest, Body: string(data)}}
}

// PromptTokens is the server's count of the request's prompt tokens (about
// four bytes of the body per token): the default usage it reports, and what
// Script.ContextLimit is checked against.
func (r Request) PromptTokens() int {
	return len(r.Raw)/bytesPerToken + 1
}

// overContext reports whether the script's context limit refuses req.
func (s Script) overContext(req Request) (Response, bool) {
	if s.ContextLimit <= 0 || req.PromptTokens() <= s.ContextLimit {
		return Response{}, false
	}
	return ContextLengthExceeded(s.ContextStyle), true
}
