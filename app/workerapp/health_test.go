package workerapp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type probeAnswer struct {
	status int
	body   string
}

func probe(t *testing.T, h http.Handler, method, path string) probeAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return probeAnswer{status: rec.Code, body: rec.Body.String()}
}

func TestReadyzSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	frontendUp := func(context.Context) error { return nil }
	frontendGone := func(context.Context) error { return errors.New("connection refused") }
	cases := []struct {
		name     string
		polling  bool
		sandbox  error
		frontend func(context.Context) error
		want     probeAnswer
	}{
		{"ready", true, nil, frontendUp, probeAnswer{200, "ready\npolling: ok\nsandbox: ok\ntemporal frontend: ok\n"}},
		{"starting", false, errors.New("not resolved yet"), nil, probeAnswer{503,
			"not ready\npolling: the worker is not polling its task queue (starting or stopping)\nsandbox: not resolved yet\ntemporal frontend: not connected yet\n"}},
		{"frontend gone", true, nil, frontendGone, probeAnswer{503,
			"not ready\npolling: ok\nsandbox: ok\ntemporal frontend: health check failed: connection refused\n"}},
		{"sandbox fell back", true, errors.New("RALPH_SANDBOX=auto fell back"), frontendUp, probeAnswer{503,
			"not ready\npolling: ok\nsandbox: RALPH_SANDBOX=auto fell back\ntemporal frontend: ok\n"}},
		{"draining", false, nil, frontendUp, probeAnswer{503,
			"not ready\npolling: the worker is not polling its task queue (starting or stopping)\nsandbox: ok\ntemporal frontend: ok\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := &readiness{polling: c.polling, sandbox: c.sandbox, frontend: c.frontend}
			h := healthHandler(r)
			if got := probe(t, h, http.MethodGet, ReadyPath); got != c.want {
				t.Errorf("GET %s = %+v, want %+v", ReadyPath, got, c.want)
			}
			// Liveness never depends on readiness.
			if got, want := probe(t, h, http.MethodGet, LivePath), (probeAnswer{200, "alive\n"}); got != want {
				t.Errorf("GET %s = %+v, want %+v", LivePath, got, want)
			}
		})
	}
}

// The frontend check gets a deadline: a frontend that hangs makes /readyz
// answer 503 instead of hanging the probe.
func TestReadyzBoundsTheFrontendCheck(t *testing.T) {
	t.Parallel()
	r := &readiness{polling: true, frontend: func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		<-ctx.Done()
		return ctx.Err()
	}}
	want := probeAnswer{503, "not ready\npolling: ok\nsandbox: ok\ntemporal frontend: health check failed: context deadline exceeded\n"}
	if got := probe(t, healthHandler(r), http.MethodGet, ReadyPath); got != want {
		t.Errorf("GET %s = %+v, want %+v", ReadyPath, got, want)
	}
}

func TestHealthRefusesOtherMethodsAndPaths(t *testing.T) {
	t.Parallel()
	h := healthHandler(newReadiness())
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, LivePath}, {http.MethodDelete, ReadyPath}, {http.MethodGet, "/metrics"},
	} {
		got := probe(t, h, c.method, c.path)
		if got.status != http.StatusMethodNotAllowed && got.status != http.StatusNotFound {
			t.Errorf("%s %s = %+v, want 405 or 404", c.method, c.path, got)
		}
	}
}

func TestServeHealthListensAndNamesABadAddress(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := serveHealth("256.0.0.1:x", newReadiness(), logger); err == nil || !strings.Contains(err.Error(), `RALPH_HEALTH_ADDRESS="256.0.0.1:x"`) {
		t.Errorf("bad address: err = %v, want one naming RALPH_HEALTH_ADDRESS", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop, err := serveHealth(addr, newReadiness(), logger)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + LivePath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := (probeAnswer{resp.StatusCode, string(body)}), (probeAnswer{200, "alive\n"}); got != want {
		t.Errorf("GET %s = %+v, want %+v", LivePath, got, want)
	}
	stop()
	if _, err := http.Get("http://" + addr + LivePath); err == nil {
		t.Error("the health server still answers after stop")
	}
}
