package wire

import (
	"net/http"
	"testing"
)

func TestIsContextLength(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    modelFailure
		want bool
	}{
		{"OpenAI code", modelFailure{status: 400, code: "context_length_exceeded", text: "whatever"}, true},
		{"OpenAI text", modelFailure{status: 400, text: "This model's maximum context length is 8192 tokens. However, your messages resulted in 8245 tokens."}, true},
		{"OpenAI configured limit", modelFailure{status: 400, text: "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens."}, true},
		{"DeepSeek", modelFailure{status: 400, code: "invalid_request_error", text: "This model's maximum context length is 65536 tokens. However, you requested 66343 tokens (62247 in the messages, 4096 in the completion)."}, true},
		{"vLLM max_tokens", modelFailure{status: 400, text: "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 tokens and your request has 2778 input tokens (8000 > 4096 - 2778)."}, true},
		{"vLLM decoder prompt", modelFailure{status: 400, text: "The decoder prompt (length 5000) is longer than the maximum model length of 4096."}, true},
		{"Ollama", modelFailure{status: 400, text: `{"error":"the input length exceeds the context length"}`}, true},
		{"llama.cpp type", modelFailure{status: 400, typ: "exceed_context_size_error", text: "request (4476 tokens) exceeds the available context size (4096 tokens)"}, true},
		{"llama.cpp old text", modelFailure{status: 400, text: "the request exceeds the available context size, try increasing it"}, true},
		{"generic prompt too long", modelFailure{status: 400, text: "prompt is too long: 205000 tokens > 200000 maximum"}, true},
		{"generic too many tokens", modelFailure{status: 400, text: "Too many tokens in the request"}, true},
		{"other 400", modelFailure{status: 400, text: "Invalid value for 'temperature': must be at most 2"}, false},
		{"429 per-minute token limit", modelFailure{status: http.StatusTooManyRequests, text: "Rate limit reached: too many tokens per min"}, false},
		{"500 Ollama", modelFailure{status: 500, text: "the input length exceeds the context length"}, false},
	} {
		if got := isContextLength(tc.f); got != tc.want {
			t.Errorf("%s: isContextLength = %v, want %v", tc.name, got, tc.want)
		}
	}
}
