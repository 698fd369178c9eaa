package wire

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// responseCapture is the HTTP wrapper every model call passes through. It
// remembers the status and headers of the last response, because
// go-openai's errors drop the headers and Retry-After is among them; it
// holds the session's dialect layer (dialect.go), which rewrites what goes
// out and normalises what comes in; and it aborts a streamed exchange that
// goes idle past idle (0: never). One capture serves one session, whose
// calls are sequential.
type responseCapture struct {
	doer    openai.HTTPDoer
	dialect *dialect
	idle    time.Duration

	mu     sync.Mutex
	status int
	header http.Header
}

func (c *responseCapture) Do(req *http.Request) (*http.Response, error) {
	if err := c.dialect.outgoing(req); err != nil {
		return nil, err
	}
	var watch *idleWatch
	if c.idle > 0 && req.Header.Get("Accept") == "text/event-stream" {
		req, watch = watchIdle(req, c.idle)
	}
	resp, err := c.doer.Do(req)
	if err == nil {
		err = c.dialect.incoming(resp)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp != nil {
		c.status, c.header = resp.StatusCode, resp.Header.Clone()
	} else {
		c.status, c.header = 0, nil
	}
	if watch == nil {
		return resp, err
	}
	if err != nil {
		watch.stop()
		return resp, watch.explain(err)
	}
	resp.Body = &idleBody{body: resp.Body, watch: watch}
	return resp, nil
}

func (c *responseCapture) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.header = 0, nil
}

// last is the status and headers of the last response; an error object
// inside a 2xx stream counts with its own status.
func (c *responseCapture) last() (int, http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.dialect.streamError(); s != 0 {
		return s, c.header
	}
	return c.status, c.header
}

// retryAfter reads how long the provider asked us to wait: retry-after-ms
// (OpenAI), then Retry-After as seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// Rate-limit reset headers (OpenAI and compatible gateways): how long until
// the request or token window resets, as a Go-style duration ("6m0s", "1s",
// "20ms") or plain seconds.
var resetHeaders = []string{"x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"}

// ProviderDelay is how long a provider's answer with status and headers h
// asks to wait: Retry-After (or retry-after-ms) when sent, else, on a 429,
// the longest of the rate-limit reset headers (waiting for the later window
// is the only wait that surely helps). Servers send the reset headers on
// every answer, so on any other status they say nothing about the failure.
func ProviderDelay(status int, h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := retryAfter(h, now); ok {
		return d, true
	}
	if status != http.StatusTooManyRequests {
		return 0, false
	}
	var longest time.Duration
	found := false
	for _, name := range resetHeaders {
		if d, ok := parseReset(h.Get(name)); ok {
			longest, found = max(longest, d), true
		}
	}
	return longest, found
}

// parseReset reads one x-ratelimit-reset-* value.
func parseReset(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return d, true
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second)), true
	}
	return 0, false
}

// backoff is the wait before retry number n (1-based): the provider's
// delay (Retry-After or a rate-limit reset) capped at maxRetryAfter when
// given, else exponential from base with jitter, capped at maxDelay.
func backoff(n, status int, h http.Header, cfg Config) time.Duration {
	if d, ok := ProviderDelay(status, h, time.Now()); ok {
		return min(d, cfg.MaxRetryAfter)
	}
	d := cfg.RetryBaseDelay
	for i := 1; i < n && d < cfg.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, cfg.RetryMaxDelay)
	// Jitter in [d/2, d] keeps many workers from retrying in lockstep.
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// traceRetry notes a transient failure that is retried, as an event on the
// model call's span (from ctx): the attempt and the HTTP status, no text.
func traceRetry(ctx context.Context, attempt, status int) {
	trace.SpanFromContext(ctx).AddEvent("retry", trace.WithAttributes(
		attribute.Int("ralph.attempt", attempt), attribute.Int("http.response.status_code", status)))
}
