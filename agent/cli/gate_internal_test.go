package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// TestNoGatewayRequestAfterTheAttempt: clients hammer the gateway
// (preconnects, model lists, streamed model requests, on kept-alive and
// fresh connections) while the attempt ends, as Provider.attempt ends it.
// Once stop returned nothing more reaches the round: no event, no request
// upstream; under -race, every request the gateway admitted is ordered
// before the end (the flake of 2026-12-06: a request entered after the
// attempt's wait for its requests had returned).
func TestNoGatewayRequestAfterTheAttempt(t *testing.T) {
	upstream := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Text("working on it")
	}})
	t.Cleanup(upstream.Close)
	for range 10 {
		attemptEndsUnderLoad(t, upstream)
	}
}

func attemptEndsUnderLoad(t *testing.T, upstream *fakeopenai.Server) {
	t.Helper()
	var mu sync.Mutex
	returned := false
	var late []agent.EventKind
	sent := 0 // requests the gateway sent upstream before it returned
	obs := agent.ObserverFunc(func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case returned && e.Kind != agent.EventSessionEnd:
			late = append(late, e.Kind)
		case e.Kind == agent.EventModelRequest:
			sent++
		}
	})
	upstreamBefore := len(upstream.Requests())
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.MaxModelCalls = upstream.BaseURL(), "sk-gate-key-0123456789", "fake-model", 1<<30
	desk, err := agent.OpenDesk(cfg, agent.Request{SessionID: "s", Objective: "Work.", Round: 1, MaxRounds: 1, Workspace: t.TempDir()}, obs)
	if err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithCancel(context.Background())
	gw := newGateway(gctx, apis[APIChat], desk, cfg, upstream.BaseURL(), cfg.APIKey, "tok", "submit_report", false,
		gatewayLimits{inflight: DefaultMaxInflight, body: DefaultMaxRequestMB << 20})
	sock := filepath.Join(t.TempDir(), "gw.sock")
	ln, err := listenUnixPath(sock)
	if err != nil {
		t.Fatal(err)
	}
	stop := serveGateway(gw, ln, cancel)

	quit := make(chan struct{})
	var answered atomic.Int64
	var clients sync.WaitGroup
	for n := range 8 {
		clients.Go(func() { hammer(sock, n, quit, &answered) })
	}
	for deadline := time.Now().Add(30 * time.Second); answered.Load() < 20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(quit)
			clients.Wait()
			t.Fatalf("the gateway answered %d model requests in 30 s, want 20 before the attempt ends", answered.Load())
		}
	}
	stop()
	mu.Lock()
	returned = true
	mu.Unlock()
	if _, err := desk.Close(context.Background(), nil); err == nil {
		t.Error("the round closed without a report and without an error")
	}
	time.Sleep(100 * time.Millisecond) // the clients go on
	close(quit)
	clients.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Fatalf("after the attempt returned the gateway still reached the round: events %v", late)
	}
	// The provider may log a request a moment after the gateway gave up
	// on it; none it logs was sent after the attempt returned.
	if n := len(upstream.Requests()) - upstreamBefore; n > sent {
		t.Fatalf("the provider got %d requests, the gateway sent %d before the attempt returned", n, sent)
	}
}

// hammer sends requests to the gateway at sock until quit; odd clients
// open a connection per request.
func hammer(sock string, n int, quit <-chan struct{}, answered *atomic.Int64) {
	tr := &http.Transport{DisableKeepAlives: n%2 == 1,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	body := `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"work"}]}`
	for i := 0; ; i++ {
		select {
		case <-quit:
			return
		default:
		}
		method, path := http.MethodPost, "/chat/completions"
		switch i % 4 {
		case 1:
			method, path = http.MethodHead, ""
		case 2:
			method, path = http.MethodGet, "/models"
		}
		req, _ := http.NewRequest(method, "http://gateway/v1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(time.Millisecond) // the socket is gone
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if method == http.MethodPost && resp.StatusCode == http.StatusOK {
			answered.Add(1)
		}
	}
}

// TestReportSocketAnswersNothingAfterClose: Close waits for a submission
// being checked, and a request still arriving on a connection opened before
// is not handed to the round.
func TestReportSocketAnswersNothingAfterClose(t *testing.T) {
	d := &slowDesk{checking: make(chan struct{}), release: make(chan struct{})}
	sock := filepath.Join(t.TempDir(), "report.sock")
	r, err := listenReport(context.Background(), sock, d, func(string) bool { return true }, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	first, second := dialLines(t, sock), dialLines(t, sock)
	if a := second.ask(t, `{"op":"describe"}`); a == nil || a.Name != "submit_report" {
		t.Fatalf("describe answered %+v", a)
	}
	first.send(t, `{"op":"submit","args":{"n":1}}`)
	<-d.checking
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a submission was being checked")
	case <-time.After(200 * time.Millisecond):
	}
	second.send(t, `{"op":"submit","args":{"n":2}}`)
	close(d.release)
	<-closed
	if a := first.read(); a == nil || a.Answer != "checked" {
		t.Errorf("the submission checked before Close was answered %+v", a)
	}
	if a := second.read(); a != nil {
		t.Errorf("a submission sent after Close was answered %+v", a)
	}
	if n := d.submits.Load(); n != 1 {
		t.Errorf("the desk was handed %d submissions, want the one sent before Close", n)
	}
}

// slowDesk checks a submission until release.
type slowDesk struct {
	checking, release chan struct{}
	submits           atomic.Int64
}

func (d *slowDesk) Finishing() (string, string, json.RawMessage) {
	return "submit_report", "", json.RawMessage(`{}`)
}
func (d *slowDesk) Forged(string, string) {}
func (d *slowDesk) Submit(context.Context, string) (string, bool, bool) {
	if d.submits.Add(1) == 1 {
		close(d.checking)
	}
	<-d.release
	return "checked", false, false
}

// lineConn is a report client speaking a line at a time.
type lineConn struct {
	c  net.Conn
	sc *bufio.Scanner
}

func dialLines(t *testing.T, sock string) *lineConn {
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineConn{c: c, sc: bufio.NewScanner(c)}
}

func (l *lineConn) send(t *testing.T, line string) {
	if _, err := io.WriteString(l.c, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// read is the next answer (nil: the connection ended without one).
func (l *lineConn) read() *deskAnswer {
	_ = l.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if !l.sc.Scan() {
		return nil
	}
	var a deskAnswer
	if json.Unmarshal(l.sc.Bytes(), &a) != nil {
		return nil
	}
	return &a
}

func (l *lineConn) ask(t *testing.T, line string) *deskAnswer {
	l.send(t, line)
	return l.read()
}

// TestAttemptEndsDuringARetryWait: a request waits out the provider's
// Retry-After (an hour) for a CLI still connected; the attempt's end stops
// the wait, so the attempt returns at once and no retry goes upstream.
func TestAttemptEndsDuringARetryWait(t *testing.T) {
	upstream := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Unavailable("3600")
	}})
	t.Cleanup(upstream.Close)
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model = upstream.BaseURL(), "sk-gate-key-0123456789", "fake-model"
	cfg.MaxRetryAfter, cfg.RetryBaseDelay, cfg.RetryMaxDelay = time.Hour, time.Hour, time.Hour
	desk, err := agent.OpenDesk(cfg, agent.Request{SessionID: "s", Objective: "Work.", Round: 1, MaxRounds: 1, Workspace: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = desk.Close(context.Background(), nil) }()
	gctx, cancel := context.WithCancel(context.Background())
	gw := newGateway(gctx, apis[APIChat], desk, cfg, upstream.BaseURL(), cfg.APIKey, "tok", "submit_report", false,
		gatewayLimits{inflight: DefaultMaxInflight, body: DefaultMaxRequestMB << 20})
	sock := filepath.Join(t.TempDir(), "gw.sock")
	ln, err := listenUnixPath(sock)
	if err != nil {
		t.Fatal(err)
	}
	stop := serveGateway(gw, ln, cancel)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"fake-model","messages":[{"role":"user","content":"work"}]}`
	if _, err := io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer tok\r\n"+
		"Content-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(upstream.Requests()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never went upstream")
		}
	}
	time.Sleep(50 * time.Millisecond) // into the wait
	start := time.Now()
	stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the attempt took %s to end during a retry wait", took)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(upstream.Requests()); n != 1 {
		t.Fatalf("%d requests went upstream, want the one before the wait", n)
	}
}
