package agent

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// responseCapture remembers the status and headers of the last HTTP
// response, because go-openai's errors drop the headers and Retry-After is
// among them. One capture serves one session, whose calls are sequential.
type responseCapture struct {
	doer openai.HTTPDoer

	mu     sync.Mutex
	status int
	header http.Header
}

func (c *responseCapture) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.doer.Do(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp != nil {
		c.status, c.header = resp.StatusCode, resp.Header.Clone()
	} else {
		c.status, c.header = 0, nil
	}
	return resp, err
}

func (c *responseCapture) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status, c.header = 0, nil
}

func (c *responseCapture) last() (int, http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
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

// providerDelay is how long the provider asked us to wait: Retry-After (or
// retry-after-ms) when sent, else the longest of the rate-limit reset
// headers (waiting for the later window is the only wait that surely helps).
func providerDelay(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := retryAfter(h, now); ok {
		return d, true
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
func backoff(n int, h http.Header, cfg Config) time.Duration {
	if d, ok := providerDelay(h, time.Now()); ok {
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
