package wire_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/wire"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

const testKey = "sk-wire-test-key"

// outcome is one Complete's answer and error, its events and what the
// scripted provider received.
type outcome struct {
	resp   openai.ChatCompletionResponse
	err    error
	events []wire.Event
	reqs   []fakeopenai.Request
}

// call makes one Complete against a scripted provider.
func call(t *testing.T, script fakeopenai.Script, adjust func(*wire.Config)) outcome {
	t.Helper()
	srv := fakeopenai.NewServer(script)
	t.Cleanup(srv.Close)
	cfg := wire.Config{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "primary", CallTimeout: 10 * time.Second,
		TransientRetries: 2, MaxRetryAfter: time.Second, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 20 * time.Millisecond,
		IdleTimeout: 10 * time.Second}
	if adjust != nil {
		adjust(&cfg)
	}
	var events []wire.Event
	c := wire.New(cfg, func(e wire.Event) { events = append(events, e) })
	resp, err := c.Complete(context.Background(), 1, openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hello"}}})
	return outcome{resp, err, events, srv.Requests()}
}

func fault(status int, body string) fakeopenai.Response {
	return fakeopenai.Response{Fault: fakeopenai.Fault{Status: status, Body: body}}
}

func models(reqs []fakeopenai.Request) string {
	var names []string
	for _, r := range reqs {
		names = append(names, r.Chat.Model)
	}
	return strings.Join(names, ",")
}

// Each way a call ends is one error kind, and the provider saw exactly the
// attempts that kind allows.
func TestCompleteEndsWithOneErrorKind(t *testing.T) {
	unavailable := fault(http.StatusServiceUnavailable, "")
	t.Run("a refusal is not retried, and the key is redacted", func(t *testing.T) {
		o := call(t, fakeopenai.Script{Queue: []fakeopenai.Response{
			fault(http.StatusUnauthorized, `{"error":{"message":"bad key `+testKey+`","type":"authentication_error"}}`)}}, nil)
		var refused *wire.RefusedError
		if !errors.As(o.err, &refused) || strings.Contains(o.err.Error(), testKey) || !strings.Contains(o.err.Error(), wire.RedactedMarker) {
			t.Fatalf("err = %v, want a RefusedError with the key redacted", o.err)
		}
		if len(o.reqs) != 1 {
			t.Errorf("the provider got %d requests, want 1", len(o.reqs))
		}
	})
	t.Run("too long for the context", func(t *testing.T) {
		o := call(t, fakeopenai.Script{Queue: []fakeopenai.Response{
			fault(http.StatusBadRequest, `{"error":{"message":"too long","code":"context_length_exceeded"}}`)}}, nil)
		var tooLong *wire.ContextLengthError
		if !errors.As(o.err, &tooLong) || tooLong.Step != 1 || len(o.reqs) != 1 {
			t.Fatalf("err = %v after %d requests, want a ContextLengthError of step 1 after 1", o.err, len(o.reqs))
		}
	})
	t.Run("transient trouble outlasts the retries", func(t *testing.T) {
		o := call(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return unavailable }}, nil)
		var mu *wire.ModelUnavailableError
		if !errors.As(o.err, &mu) || mu.Attempts != 3 || len(o.reqs) != 3 || len(o.events) != 3 {
			t.Fatalf("err = %v after %d requests and %d events, want ModelUnavailable after 3 attempts", o.err, len(o.reqs), len(o.events))
		}
		if e := o.events[0]; e.Kind != wire.EventError || !e.Transient || e.HTTPStatus != http.StatusServiceUnavailable || e.RetryInMs == 0 {
			t.Errorf("first event = %+v, want a transient 503 model_error with its retry delay", e)
		}
	})
	t.Run("a deferrable client defers on a long Retry-After", func(t *testing.T) {
		o := call(t, fakeopenai.Script{Queue: []fakeopenai.Response{
			{Fault: fakeopenai.Fault{Status: http.StatusTooManyRequests, RetryAfter: "3600"}}}},
			func(c *wire.Config) { c.Deferrable = true })
		var d *wire.DeferredError
		if !errors.As(o.err, &d) || d.Reason != wire.DeferRateLimited || d.RetryAfter != time.Hour || d.Model != "primary" || len(o.reqs) != 1 {
			t.Fatalf("err = %v after %d requests, want a rate-limited deferral of 1h after 1", o.err, len(o.reqs))
		}
	})
	t.Run("a deferrable client defers at once on an exhausted quota", func(t *testing.T) {
		o := call(t, fakeopenai.Script{Queue: []fakeopenai.Response{
			fault(http.StatusTooManyRequests, `{"error":{"message":"out of quota","type":"insufficient_quota","code":"insufficient_quota"}}`)}},
			func(c *wire.Config) { c.Deferrable = true })
		var d *wire.DeferredError
		if !errors.As(o.err, &d) || d.Reason != wire.DeferQuota || len(o.reqs) != 1 {
			t.Fatalf("err = %v after %d requests, want a quota deferral after 1", o.err, len(o.reqs))
		}
	})
}

// When the primary's retries are spent, the same request goes to the
// fallback with a retry budget of its own, and the client stays there.
func TestCompleteFallsBackOnEveryWire(t *testing.T) {
	for _, w := range []struct {
		name   string
		adjust func(*wire.Config)
	}{
		{"chat", func(c *wire.Config) { c.FallbackModels = []string{"fallback"} }},
		{"chat streamed", func(c *wire.Config) { c.FallbackModels, c.Stream = []string{"fallback"}, true }},
		{"responses", func(c *wire.Config) { c.FallbackModels, c.WireAPI = []string{"fallback"}, wire.APIResponses }},
	} {
		t.Run(w.name, func(t *testing.T) {
			unavailable := fault(http.StatusServiceUnavailable, "")
			o := call(t, fakeopenai.Script{
				Queue: []fakeopenai.Response{unavailable, unavailable, unavailable, unavailable, fakeopenai.Text("from the fallback")}}, w.adjust)
			if o.err != nil || o.resp.Choices[0].Message.Content != "from the fallback" {
				t.Fatalf("Complete = %+v, %v; want the fallback's answer", o.resp, o.err)
			}
			if got, want := models(o.reqs), "primary,primary,primary,fallback,fallback"; got != want {
				t.Errorf("the provider got requests for %s, want %s", got, want)
			}
			var fallbacks int
			for _, e := range o.events {
				if e.Kind == wire.EventFallback {
					fallbacks++
					if e.Model != "fallback" {
						t.Errorf("fallback event names %q", e.Model)
					}
				}
			}
			if fallbacks != 1 {
				t.Errorf("%d fallback events, want 1", fallbacks)
			}
		})
	}
}
