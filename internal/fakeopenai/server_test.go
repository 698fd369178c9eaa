package fakeopenai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
)

func client(s *fakeopenai.Server) *openai.Client {
	cfg := openai.DefaultConfig("sk-fake")
	cfg.BaseURL = s.BaseURL()
	return openai.NewClientWithConfig(cfg)
}

func chat(msgs ...openai.ChatCompletionMessage) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "m", Messages: msgs}
}

var hello = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "hello"}

func TestQueueThenRuleThenExhausted(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.Script{Queue: []fakeopenai.Response{
		{Content: "first", Reasoning: "because"},
		fakeopenai.Tools(fakeopenai.CallJSON("list_files", map[string]string{})),
	}})
	defer s.Close()
	c := client(s)
	resp, err := c.CreateChatCompletion(context.Background(), chat(hello))
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if m.Content != "first" || m.ReasoningContent != "because" || resp.Usage.TotalTokens == 0 || resp.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Errorf("first answer = %+v", resp)
	}
	resp, err = c.CreateChatCompletion(context.Background(), chat(hello))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].ID == "" || calls[0].Function.Name != "list_files" || resp.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Errorf("second answer = %+v", resp)
	}
	_, err = c.CreateChatCompletion(context.Background(), chat(hello))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, "script exhausted at request 2") {
		t.Errorf("third answer error = %v", err)
	}
	if got := s.Requests(); len(got) != 3 || got[2].Index != 2 || got[0].Chat.Messages[0].Content != "hello" || got[0].Header.Get("Authorization") != "Bearer sk-fake" {
		t.Errorf("recorded = %+v", got)
	}
}

func TestRejectsWhatStrictProvidersReject(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("ok") }})
	defer s.Close()
	asked := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{
		{ID: "c1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "list_files", Arguments: "{}"}},
	}}
	for _, tc := range []struct {
		name string
		req  openai.ChatCompletionRequest
		want string
	}{
		{"empty tool message", chat(hello, asked, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: "c1"}), "content must be non-empty"},
		{"unanswered call", chat(hello, asked, hello), "missing c1"},
		{"unknown call id", chat(hello, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: "zz", Content: "x"}), `"zz"`},
	} {
		_, err := client(s).CreateChatCompletion(context.Background(), tc.req)
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, tc.want) {
			t.Errorf("%s: error = %v, want a 400 mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestFaults(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.RateLimited("7"),
		fakeopenai.HTMLPage(502),
		fakeopenai.Drop(),
	}})
	defer s.Close()
	post := func() (*http.Response, error) {
		return http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	}
	resp, err := post()
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("429: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = post()
	if err != nil || resp.StatusCode != 502 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("502: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "<h1>502 Bad Gateway</h1>") {
		t.Errorf("502 body = %q", body)
	}
	if resp, err := post(); err == nil {
		resp.Body.Close()
		t.Fatalf("dropped connection answered %s", resp.Status)
	}
}

func TestHangEndsWithClientAndListen(t *testing.T) {
	s, err := fakeopenai.Listen("127.0.0.1:0", fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Hang()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.BaseURL(), "http://127.0.0.1:") || !strings.HasSuffix(s.BaseURL(), "/v1") {
		t.Errorf("BaseURL = %q", s.BaseURL())
	}
	ctx := cancelledOnArrival(t, s)
	if _, err := client(s).CreateChatCompletion(ctx, chat(hello)); !errors.Is(err, context.Canceled) {
		t.Errorf("hang ended with %v, want context.Canceled", err)
	}
}

// Delivered counts only answers a connected client was given: one whose
// client gave up during the delay is received but never delivered.
func TestDeliveredSkipsAClientThatLeft(t *testing.T) {
	var mu sync.Mutex
	var delivered []int
	s := fakeopenai.NewServer(fakeopenai.Script{
		Rule: func(req fakeopenai.Request) fakeopenai.Response {
			if req.Index == 0 {
				return fakeopenai.Response{Content: "too late", Delay: time.Hour}
			}
			return fakeopenai.Response{Content: "in time"}
		},
		Delivered: func(req fakeopenai.Request, _ fakeopenai.Response) {
			mu.Lock()
			delivered = append(delivered, req.Index)
			mu.Unlock()
		},
	})
	defer s.Close()
	ctx := cancelledOnArrival(t, s)
	if _, err := client(s).CreateChatCompletion(ctx, chat(hello)); !errors.Is(err, context.Canceled) {
		t.Fatalf("first request ended with %v, want context.Canceled", err)
	}
	if _, err := client(s).CreateChatCompletion(context.Background(), chat(hello)); err != nil {
		t.Fatal(err)
	}
	// Delivered runs after the flush, so the client may see the answer first.
	err := wait.For(context.Background(), 10*time.Second, time.Millisecond, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(delivered) != 1 || delivered[0] != 1 {
			return fmt.Errorf("delivered = %v, want only request 1 (request 0's client left during the delay)", delivered)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// cancelledOnArrival is a context cancelled once s has received a request.
func cancelledOnArrival(t *testing.T, s *fakeopenai.Server) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		defer cancel()
		_ = wait.Until(ctx, 5*time.Millisecond, func(context.Context) error {
			if s.RequestCount() == 0 {
				return errors.New("no request yet")
			}
			return nil
		})
	}()
	return ctx
}

// With store off, a function call sent back without the reasoning item it
// came with is refused, as OpenAI refuses it.
func TestResponsesRefusesACallWithoutItsReasoning(t *testing.T) {
	s := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		r := fakeopenai.Tools(fakeopenai.Call{ID: "call_1", Name: "list_files", Arguments: "{}"})
		r.Reasoning = "look first"
		return r
	}})
	defer s.Close()
	post := func(body string) (int, string) {
		resp, err := http.Post(s.BaseURL()+"/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	tools := `"tools":[{"type":"function","name":"list_files","parameters":{"type":"object"}}]`
	status, first := post(`{"model":"m","store":false,` + tools + `,"input":[{"role":"user","content":"hi"}]}`)
	if status != 200 || !strings.Contains(first, `"encrypted_content":"enc-0-`) || !strings.Contains(first, `"call_id":"call_1"`) {
		t.Fatalf("first answer %d: %s", status, first)
	}
	call := `{"type":"function_call","call_id":"call_1","name":"list_files","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"a.txt"}`
	status, refused := post(`{"model":"m","store":false,` + tools + `,"input":[{"role":"user","content":"hi"},` + call + `]}`)
	if status != 400 || !strings.Contains(refused, "without its required 'reasoning' item") {
		t.Errorf("a call without its reasoning item: %d %s", status, refused)
	}
	status, _ = post(`{"model":"m",` + tools + `,"input":[{"role":"user","content":"hi"}]}`)
	if status != 400 {
		t.Errorf("a request without store: false got %d, want 400", status)
	}
}
