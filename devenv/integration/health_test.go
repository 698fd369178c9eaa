package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
)

// frontendLink forwards TCP from addr to the Temporal frontend, so a test
// can take the frontend away from one worker without stopping the suite's
// server.
type frontendLink struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func linkFrontend(t *testing.T, addr string) *frontendLink {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	l := &frontendLink{ln: ln}
	t.Cleanup(l.cut)
	go l.serve()
	return l
}

func (l *frontendLink) serve() {
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", suite.address)
		if err != nil {
			in.Close()
			continue
		}
		l.mu.Lock()
		l.conns = append(l.conns, in, out)
		l.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// cut closes the listener and every forwarded connection: the frontend is
// gone for whoever dialled addr.
func (l *frontendLink) cut() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

type healthAnswer struct {
	status int
	body   string
}

func getHealth(addr, path string) (healthAnswer, error) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return healthAnswer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return healthAnswer{resp.StatusCode, string(body)}, err
}

// waitHealth polls path until it answers want (a minute at most).
func waitHealth(t *testing.T, addr, path string, want healthAnswer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last healthAnswer
	err := wait.Until(ctx, 200*time.Millisecond, func(context.Context) error {
		got, err := getHealth(addr, path)
		if err != nil {
			return err
		}
		if last = got; got != want {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("GET %s: last answer %+v, want %+v (%v)", path, last, want, err)
	}
}

var idleScript = agentScript(func(turn) fakeopenai.Response { return submit(completeArgs("nothing to do", "none")) })

const alive = "alive\n"

// The probes of a worker on the real stack: ready while it polls with the
// sandbox working and the frontend up; not ready (and still alive) once the
// frontend is gone; ready again when it is back.
func TestRealStackHealthFollowsTheFrontend(t *testing.T) {
	t.Parallel()
	health, frontend := freeAddr(t), freeAddr(t)
	link := linkFrontend(t, frontend)
	e := newEnv(t, idleScript, "RALPH_HEALTH_ADDRESS="+health, "RALPH_SANDBOX=bwrap", "TEMPORAL_ADDRESS="+frontend)
	e.startWorker()
	ready := healthAnswer{200, "ready\npolling: ok\nsandbox: ok\ntemporal frontend: ok\n"}
	waitHealth(t, health, "/readyz", ready)
	waitHealth(t, health, "/healthz", healthAnswer{200, alive})

	link.cut()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got healthAnswer
	err := wait.Until(ctx, 200*time.Millisecond, func(context.Context) error {
		var err error
		if got, err = getHealth(health, "/readyz"); err != nil {
			return err
		}
		if got.status != http.StatusServiceUnavailable {
			return fmt.Errorf("status %d", got.status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("/readyz with the frontend gone: %+v (%v)", got, err)
	}
	if want := "not ready\npolling: ok\nsandbox: ok\ntemporal frontend: health check failed: "; !strings.HasPrefix(got.body, want) {
		t.Errorf("/readyz with the frontend gone = %q, want it to start %q", got.body, want)
	}
	waitHealth(t, health, "/healthz", healthAnswer{200, alive})

	linkFrontend(t, frontend)
	waitHealth(t, health, "/readyz", ready)
}

// A worker whose sandbox does not work polls (auto falls back to running
// commands unsandboxed) but is never ready.
func TestRealStackHealthNotReadyWithoutAWorkingSandbox(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	// A bwrap that cannot create its namespaces, first on PATH.
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	health := freeAddr(t)
	e := newEnv(t, idleScript, "RALPH_HEALTH_ADDRESS="+health, "RALPH_SANDBOX=auto", "PATH="+bin+":"+os.Getenv("PATH"))
	e.startWorker()
	got, err := getHealth(health, "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	want := "not ready\npolling: ok\nsandbox: RALPH_SANDBOX=auto fell back to running commands unsandboxed: "
	if got.status != http.StatusServiceUnavailable || !strings.HasPrefix(got.body, want) || !strings.Contains(got.body, "No permissions to create new namespace") ||
		!strings.HasSuffix(got.body, "\ntemporal frontend: ok\n") {
		t.Errorf("/readyz = %+v, want 503 starting %q, naming bubblewrap's message, frontend ok", got, want)
	}
	waitHealth(t, health, "/healthz", healthAnswer{200, alive})
}
