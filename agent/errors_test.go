package agent_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/internal/wait"
)

func TestTransientErrorsAreRetriedInSession(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.RateLimited("1"),
		fakeopenai.Status(http.StatusInternalServerError, "internal error"),
		fakeopenai.HTMLPage(http.StatusBadGateway),
		fakeopenai.Drop(),
		{Content: "not json", Fault: fakeopenai.Fault{Status: http.StatusOK, ContentType: "text/html", Body: "<html>captive portal</html>"}},
		submit(validContinue),
	}})
	res, err := h.run()
	if err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	if len(h.requests()) != 6 || res.Usage.ModelCalls != 1 {
		t.Errorf("%d requests, usage %+v; want 6 requests and one completed call", len(h.requests()), res.Usage)
	}
	errs := h.events.ofKind(agent.EventModelError)
	if len(errs) != 5 {
		t.Fatalf("model_error events = %+v, want 5", errs)
	}
	for i, e := range errs {
		if !e.Transient || e.Step != 1 || e.Attempt != i+1 {
			t.Errorf("model_error %d = %+v, want a transient error of step 1 attempt %d", i, e, i+1)
		}
	}
	if errs[0].HTTPStatus != 429 || errs[0].RetryInMs != 1000 {
		t.Errorf("429 event = %+v, want Retry-After: 1 honoured (1000 ms)", errs[0])
	}
	if errs[2].HTTPStatus != 502 || errs[1].HTTPStatus != 500 {
		t.Errorf("statuses = %d, %d", errs[1].HTTPStatus, errs[2].HTTPStatus)
	}
}

func TestRetryAfterIsCapped(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.RateLimited("3600"), submit(validContinue)}})
	h.cfg.MaxRetryAfter = 10 * time.Millisecond
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	if e := h.events.ofKind(agent.EventModelError); len(e) != 1 || e[0].RetryInMs != 10 {
		t.Errorf("model_error = %+v, want the wait capped at 10 ms", e)
	}
}

func TestTransientErrorsExhaustedAreModelUnavailable(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Status(http.StatusServiceUnavailable, "overloaded")
	}})
	h.cfg.TransientRetries = 2
	_, err := h.run()
	var mu *agent.ModelUnavailableError
	if !errors.As(err, &mu) || mu.Attempts != 3 || !strings.Contains(mu.Last, "503") {
		t.Fatalf("error = %v (%T), want ModelUnavailable after 3 attempts", err, err)
	}
	if agent.IsChildFailure(err) {
		t.Error("exhausted transient errors must not be a child failure")
	}
	if n := len(h.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestOrdinaryModelErrorsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp fakeopenai.Response
		want string
	}{
		{"401", fakeopenai.Status(http.StatusUnauthorized, "Incorrect API key provided: "+testKey), "HTTP 401"},
		{"400 other", fakeopenai.Status(http.StatusBadRequest, "Invalid value for 'temperature'"), "HTTP 400"},
		{"403", fakeopenai.Status(http.StatusForbidden, "forbidden"), "HTTP 403"},
		{"404 html", fakeopenai.HTMLPage(http.StatusNotFound), "HTTP 404"},
		{"422", fakeopenai.Status(http.StatusUnprocessableEntity, "bad tool schema"), "HTTP 422"},
		{"429 quota", fakeopenai.Response{Fault: fakeopenai.Fault{Status: 429, Body: `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`}}, "quota"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{tc.resp}})
			_, err := h.run()
			wantChildFailure(t, err, tc.want)
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error leaks the API key: %v", err)
			}
			if n := len(h.requests()); n != 1 {
				t.Errorf("%d requests, want exactly 1", n)
			}
		})
	}
}

func TestAPIKeyIsSentButNeverRecorded(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	var buf strings.Builder
	tr := agent.NewTranscript(&buf, testKey)
	if _, err := agent.RunSession(context.Background(), h.cfg, h.req, tr); err != nil {
		t.Fatal(err)
	}
	if got := h.requests()[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if tr.Err() != nil || !strings.Contains(buf.String(), `"kind":"session_end"`) {
		t.Fatalf("transcript = %q, err %v", buf.String(), tr.Err())
	}
	if strings.Contains(buf.String(), testKey) {
		t.Error("transcript contains the API key")
	}
}

func TestPerCallTimeoutIsRetriedThenModelUnavailable(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Hang(), fakeopenai.Hang()}})
	h.cfg.CallTimeout = 100 * time.Millisecond
	h.cfg.TransientRetries = 1
	_, err := h.run()
	if !agent.IsModelUnavailable(err) || !strings.Contains(err.Error(), "per-call timeout") {
		t.Fatalf("err = %v, want ModelUnavailable naming the per-call timeout", err)
	}
	if n := len(h.requests()); n != 2 {
		t.Fatalf("requests = %d, want the hang retried once", n)
	}
}

func TestRoundDeadlineIsChildFailure(t *testing.T) {
	// The hand-off call itself hangs past the round deadline: nothing is
	// left to hand off with.
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]any{"command": "sleep 30"}),
		fakeopenai.Hang(),
	}})
	h.req.Deadline = time.Now().Add(300 * time.Millisecond)
	_, err := h.run()
	wantChildFailure(t, err, "round timeout")
}

func TestCancelAbortsModelCall(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Hang()}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_ = wait.Until(ctx, 5*time.Millisecond, func(context.Context) error {
			if h.srv.RequestCount() == 0 {
				return errors.New("no request yet")
			}
			return nil
		})
		cancel()
	}()
	_, err := h.runCtx(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestCancelKillsRunningCommand(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]any{"command": "sleep 300 & echo $! > sleep.pid; wait"}),
	}})
	pidFile := filepath.Join(h.req.Workspace, "sleep.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := testkit.CancelOnPID(t, pidFile, cancel)
	started := time.Now()
	_, err := h.runCtx(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if d := time.Since(started); d > 30*time.Second {
		t.Errorf("cancel took %s", d)
	}
	waitGone(t, pid())
	if ends := h.events.ofKind(agent.EventSessionEnd); len(ends) != 1 || ends[0].Outcome != agent.OutcomeCancelled {
		t.Errorf("session_end = %+v", ends)
	}
}

// waitGone waits (generously) until pid no longer runs; a zombie awaiting
// its reaper counts as gone.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if proc.WaitGone(context.Background(), 10*time.Second, pid) != nil {
		t.Fatalf("process %d still runs after cancel", pid)
	}
}
