package wire

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"retry-after-ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %s, %v; want %s, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffStaysWithinBounds(t *testing.T) {
	cfg := Config{RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second, MaxRetryAfter: 5 * time.Second}
	for n := 1; n <= 10; n++ {
		want := min(cfg.RetryBaseDelay<<(n-1), cfg.RetryMaxDelay)
		if d := backoff(n, 0, nil, cfg); d < want/2 || d > want {
			t.Errorf("backoff(%d) = %s, want within [%s, %s]", n, d, want/2, want)
		}
	}
	h := http.Header{"Retry-After": []string{"120"}}
	if d := backoff(1, 503, h, cfg); d != cfg.MaxRetryAfter {
		t.Errorf("backoff with Retry-After 120 = %s, want the %s cap", d, cfg.MaxRetryAfter)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"429", &openai.APIError{HTTPStatusCode: 429, Message: "slow down"}, true},
		{"408", &openai.APIError{HTTPStatusCode: 408}, true},
		{"409", &openai.APIError{HTTPStatusCode: 409}, true},
		{"503 html", &openai.RequestError{HTTPStatusCode: 503, Body: []byte("<html>")}, true},
		{"400", &openai.APIError{HTTPStatusCode: 400}, false},
		{"401", &openai.APIError{HTTPStatusCode: 401}, false},
		{"404 html", &openai.RequestError{HTTPStatusCode: 404, Body: []byte("<html>")}, false},
		{"quota", &openai.APIError{HTTPStatusCode: 429, Code: "insufficient_quota"}, false},
		{"eof", fmt.Errorf("post: %w", io.EOF), true},
		{"no choices", errNoChoices, true},
		{"other", errors.New("something odd"), false},
	} {
		if got := classify(tc.err, 0).transient; got != tc.transient {
			t.Errorf("%s: transient = %v, want %v", tc.name, got, tc.transient)
		}
	}
}
