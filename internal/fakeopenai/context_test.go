package fakeopenai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

func TestContextLimitRefusesLargerRequests(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.Script{ContextLimit: 100, ContextStyle: fakeopenai.ContextLlamaCpp,
		Rule: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("fits") }})
	defer s.Close()
	c := client(s)
	if _, err := c.CreateChatCompletion(context.Background(), chat(hello)); err != nil {
		t.Fatalf("a small request: %v", err)
	}
	big := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: strings.Repeat("x", 400)}
	_, err := c.CreateChatCompletion(context.Background(), chat(big))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest || apiErr.Type != "exceed_context_size_error" {
		t.Fatalf("a request past the limit: %v, want llama.cpp's 400", err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].PromptTokens() > 100 || reqs[1].PromptTokens() <= 100 {
		t.Errorf("recorded %d requests with %v tokens", len(reqs), []int{reqs[0].PromptTokens(), reqs[1].PromptTokens()})
	}
}

func TestContextStylesDecodeAsProvidersSendThem(t *testing.T) {
	for _, tc := range []struct {
		style fakeopenai.ContextStyle
		want  string
	}{
		{fakeopenai.ContextOpenAI, "maximum context length"},
		{fakeopenai.ContextDeepSeek, "maximum context length"},
		{fakeopenai.ContextVLLM, "maximum context length"},
		{fakeopenai.ContextOllama, "the input length exceeds the context length"},
		{fakeopenai.ContextLlamaCpp, "exceeds the available context size"},
	} {
		s := fakeopenai.NewServer(fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.ContextLengthExceeded(tc.style)}})
		_, err := client(s).CreateChatCompletion(context.Background(), chat(hello))
		s.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "400") {
			t.Errorf("%s: error = %v, want a 400 saying %q", tc.style, err, tc.want)
		}
	}
}

func TestNoUsage(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.Script{Queue: []fakeopenai.Response{{Content: "x", NoUsage: true}, {Content: "y"}}})
	defer s.Close()
	c := client(s)
	first, err := c.CreateChatCompletion(context.Background(), chat(hello))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateChatCompletion(context.Background(), chat(hello))
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.PromptTokens != 0 || second.Usage.PromptTokens != s.Requests()[1].PromptTokens() {
		t.Errorf("usage = %+v then %+v", first.Usage, second.Usage)
	}
}
