package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/usage"
)

// The gateway books what the provider reported under usage and what it
// had to estimate apart, under usage.estimated (issue 51): an answer with
// usage (3,906 prompt / 123 completion tokens), one without any (opencode's
// title request), and one cut before its usage.
func TestGatewayBooksAnswersWithoutUsageAsEstimated(t *testing.T) {
	const chunk = `data: {"object":"chat.completion.chunk","model":"fake-model","choices":[{"index":0,"delta":{"content":"Fix"}}]}` + "\n\n"
	answers := []string{"usage", "none", "cut"} // in the order sent (the gateway forwards no header of ours)
	n := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		n++
		switch answers[n-1] {
		case "usage":
			_, _ = io.WriteString(w, chunk+`data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3906,"completion_tokens":123}}`+"\n\ndata: [DONE]\n\n")
		case "none":
			_, _ = io.WriteString(w, chunk+"data: [DONE]\n\n")
		case "cut":
			_, _ = io.WriteString(w, chunk)
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the stream ends before its usage
			}
		}
	}))
	defer upstream.Close()
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model = upstream.URL+"/v1", "sk-usage-key-0123456789", "fake-model"
	desk, err := agent.OpenDesk(cfg, agent.Request{SessionID: "u", Objective: "Count.", Round: 1, MaxRounds: 1, Workspace: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = desk.Close(context.Background(), nil) }()
	gw := newGateway(context.Background(), apis[APIChat], desk, cfg, upstream.URL+"/v1", cfg.APIKey, "tok", "submit_report", false,
		gatewayLimits{inflight: DefaultMaxInflight, body: DefaultMaxRequestMB << 20})
	front := httptest.NewServer(gw)
	defer front.Close()

	body := `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 800) + `"}]}`
	send := func(answer string) {
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", answer, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	send("usage")
	if u := desk.Usage(); u != (usage.Usage{ModelCalls: 1, PromptTokens: 3906, CompletionTokens: 123}) {
		t.Fatalf("after an answer with usage: %+v, want the provider's figures and nothing estimated", u)
	}
	send("none")
	send("cut")
	estimate := len(body) / charsPerToken
	u := desk.Usage()
	want := usage.Usage{ModelCalls: 3, PromptTokens: 3906, CompletionTokens: 123,
		Estimated: usage.Counts{ModelCalls: 2, PromptTokens: 2 * estimate, CompletionTokens: u.Estimated.CompletionTokens}}
	if u != want || u.Estimated.CompletionTokens < 2 {
		t.Fatalf("usage %+v, want %+v: the provider's figures as reported, two answers estimated apart", u, want)
	}
	if got := u.Tokens(); got != 3906+123+2*estimate+u.Estimated.CompletionTokens {
		t.Errorf("charged %d tokens, want reported plus estimated", got)
	}
}
