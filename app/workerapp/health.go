package workerapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// The probe paths the worker serves on RALPH_HEALTH_ADDRESS; the Kubernetes
// manifests in deploy/kubernetes probe them (docs/operations.md).
const (
	LivePath  = "/healthz"
	ReadyPath = "/readyz"
)

// ReadyCheckTimeout bounds the frontend check of one /readyz request, so
// that a probe with a timeout of a few seconds gets an answer, not a hang.
const ReadyCheckTimeout = 2 * time.Second

// readiness is what /readyz reports: the worker polls its task queue, the
// commands' sandbox is the one configured, and the Temporal frontend answers
// its health check. Liveness depends on none of them: a frontend outage must
// not make Kubernetes restart every worker and cancel their rounds.
type readiness struct {
	mu       sync.Mutex
	polling  bool
	sandbox  error                           // nil when commands run as configured
	frontend func(ctx context.Context) error // nil until the client is connected
}

func newReadiness() *readiness {
	return &readiness{sandbox: errors.New("not resolved yet")}
}

// setSandbox records whether the sandbox in effect is the configured one: an
// auto mode that fell back to unsandboxed commands is not ready.
func (r *readiness) setSandbox(sb *sandbox.Sandbox) {
	var err error
	if why := sb.Fallback(); why != "" {
		err = fmt.Errorf("RALPH_SANDBOX=auto fell back to running commands unsandboxed: %s", why)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandbox = err
}

func (r *readiness) setFrontend(check func(ctx context.Context) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frontend = check
}

func (r *readiness) setPolling(polling bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.polling = polling
}

// check is one line of the /readyz answer.
type check struct {
	name string
	err  error
}

// checks evaluates every condition of readiness, the frontend last (it is
// the only one that leaves the process).
func (r *readiness) checks(ctx context.Context) []check {
	r.mu.Lock()
	polling, sb, frontend := r.polling, r.sandbox, r.frontend
	r.mu.Unlock()
	out := []check{{name: "polling"}, {name: "sandbox", err: sb}, {name: "temporal frontend"}}
	if !polling {
		out[0].err = errors.New("the worker is not polling its task queue (starting or stopping)")
	}
	if frontend == nil {
		out[2].err = errors.New("not connected yet")
	} else {
		ctx, cancel := context.WithTimeout(ctx, ReadyCheckTimeout)
		defer cancel()
		if err := frontend(ctx); err != nil {
			out[2].err = fmt.Errorf("health check failed: %w", err)
		}
	}
	return out
}

// healthHandler answers /healthz with 200 while the process serves, and
// /readyz with 200 when every check passes, else 503; the body has one line
// per check so that `curl` says what is missing.
func healthHandler(r *readiness) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LivePath, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "alive")
	})
	mux.HandleFunc("GET "+ReadyPath, func(w http.ResponseWriter, req *http.Request) {
		var b strings.Builder
		status, verdict := http.StatusOK, "ready"
		for _, c := range r.checks(req.Context()) {
			if c.err != nil {
				status, verdict = http.StatusServiceUnavailable, "not ready"
				fmt.Fprintf(&b, "%s: %v\n", c.name, c.err)
				continue
			}
			fmt.Fprintf(&b, "%s: ok\n", c.name)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%s\n%s", verdict, b.String())
	})
	return mux
}

// serveHealth serves the probes on addr until the returned stop is called.
func serveHealth(addr string, r *readiness, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("RALPH_HEALTH_ADDRESS=%q: %w", addr, err)
	}
	srv := &http.Server{Handler: healthHandler(r), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("health server stopped with an error", "error", err)
		}
	}()
	logger.Info("serving health probes", "address", ln.Addr().String(), "live", LivePath, "ready", ReadyPath)
	return func() { _ = srv.Close() }, nil
}
