// Package fakeopenai is a scripted OpenAI-compatible chat-completions server.
// Tests use it to drive the agent loop through the real go-openai client
// (tool calls, repairs, faults), and the product's demo mode runs the real
// stack against it when there is no model key (see DemoScript).
//
// It answers POST /v1/chat/completions (and /chat/completions), records every
// request, checks each request the way strict providers do (every tool call
// answered by a non-empty tool message) and can inject HTTP errors, HTML
// error pages, Retry-After headers, dropped connections and hangs.
package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Bounds that keep a long-running demo server small.
const (
	// MaxRequestBytes bounds one request body.
	MaxRequestBytes = 64 << 20
	// RecordLimit bounds the recorded requests; past it the oldest half is
	// dropped (tests stay far below it, a demo server may run for long).
	RecordLimit = 4096
)

// Server is a running fake endpoint.
type Server struct {
	srv     *httptest.Server
	script  Script
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex
	next     int
	requests []Request
	left     map[int]time.Time // request index: when its client left mid-stream
	// reasoningOf is the reasoning item sent with each call (Responses).
	reasoningOf map[string]issuedReasoning
	// namespaces maps a namespaced tool's flat name to its namespace and name (Responses).
	namespaces map[string][2]string
	// signatures are the thought signatures sent by call id (Gemini).
	signatures map[string]string
	// reasoningSent: an answer carried reasoning_content (DeepSeek).
	reasoningSent bool
}

// NewServer starts a fake endpoint on a random 127.0.0.1 port.
func NewServer(script Script) *Server {
	s := newServer(script)
	s.srv = httptest.NewServer(s)
	return s
}

// Listen starts a fake endpoint on addr (for example "127.0.0.1:0" or
// "127.0.0.1:8089"), for running it as a standalone server in demo mode.
func Listen(addr string, script Script) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fake OpenAI server: listen on %s: %w", addr, err)
	}
	s := newServer(script)
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	return s, nil
}

func newServer(script Script) *Server {
	return &Server{script: script, closing: make(chan struct{}), reasoningOf: map[string]issuedReasoning{}, namespaces: map[string][2]string{}, signatures: map[string]string{}}
}

// BaseURL is the value for OPENAI_BASE_URL (it ends in /v1).
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.srv.Listener.Addr().String() }

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// Requests returns a copy of the recorded requests in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// RequestCount is how many chat-completions requests arrived so far.
func (s *Server) RequestCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	wire := ""
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		wire = WireChat
	case "/v1/responses", "/responses":
		wire = WireResponses
	case "/v1/messages", "/messages":
		wire = WireMessages
	}
	if r.Method != http.MethodPost || wire == "" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("fakeopenai: no route for %s %s", r.Method, r.URL.Path))
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fakeopenai: read body: %v", err))
		return
	}
	if len(raw) > MaxRequestBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "fakeopenai: request body too large")
		return
	}
	req, decodeErr := s.record(raw, r.Header, wire)
	if decodeErr != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fakeopenai: body is not a %s request: %v", wire, decodeErr))
		return
	}
	if err := s.validate(req); err != nil {
		writeError(w, http.StatusBadRequest, "fakeopenai: "+err.Error())
		return
	}
	if refusal, bad := s.strictRefusal(req); bad {
		writeError(w, http.StatusBadRequest, refusal)
		return
	}
	if refusal, over := s.script.overContext(req); over {
		s.serve(w, r, req, refusal)
		return
	}
	resp, ok := s.choose(req)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fakeopenai: script exhausted at request %d", req.Index))
		return
	}
	s.serve(w, r, req, resp)
}

// validate checks a request as strict providers do, on its wire.
func (s *Server) validate(req Request) error {
	if req.Wire == WireResponses && (req.Store == nil || *req.Store) {
		return fmt.Errorf("this fake serves the Responses API with store: false only (the whole conversation in every request)")
	}
	return validateRequest(req.Chat)
}

// record assigns the request its index and keeps it for assertions.
func (s *Server) record(raw []byte, header http.Header, wire string) (Request, error) {
	req := Request{Raw: raw, Header: header.Clone(), Time: time.Now(), Wire: wire}
	var decodeErr error
	switch wire {
	case WireResponses:
		decodeErr = s.decodeResponses(raw, &req)
	case WireMessages:
		decodeErr = decodeMessages(raw, &req)
	default:
		decodeErr = json.NewDecoder(bytes.NewReader(raw)).Decode(&req.Chat)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Index = s.next
	s.next++
	if len(s.requests) >= RecordLimit {
		s.requests = append([]Request(nil), s.requests[RecordLimit/2:]...)
	}
	s.requests = append(s.requests, req)
	return req, decodeErr
}

func (s *Server) choose(req Request) (Response, bool) {
	if req.Index < len(s.script.Queue) {
		return s.script.Queue[req.Index], true
	}
	if s.script.Rule != nil {
		return s.script.Rule(req), true
	}
	return Response{}, false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, req Request, resp Response) {
	if resp.Delay > 0 && !s.wait(r, resp.Delay) {
		return
	}
	if resp.Reasoning != "" && resp.Fault.Status == 0 {
		s.mu.Lock()
		s.reasoningSent = true
		s.mu.Unlock()
	}
	f := resp.Fault
	if !req.Chat.Stream {
		f = unstreamed(f)
	}
	switch {
	case f.Hang:
		if !s.wait(r, -1) {
			s.noteLeft(req)
		}
	case f.Drop:
		dropConnection(w)
	case f.Status != 0:
		writeFault(w, f)
	case req.Wire == WireResponses:
		s.serveResponses(w, r, req, resp)
	case req.Wire == WireMessages:
		s.serveMessages(w, r, req, resp)
	case req.Chat.Stream:
		s.writeStream(w, r, req, resp)
	default:
		s.serveCompletion(w, req, resp)
	}
}

// writeFault answers with the fault's HTTP error: its status, headers and
// body (an OpenAI error body by default).
func writeFault(w http.ResponseWriter, f Fault) {
	body := f.Body
	if body == "" {
		body = errorBody(f.Status, http.StatusText(f.Status))
	}
	contentType := f.ContentType
	if contentType == "" {
		contentType = "application/json"
	}
	w.Header().Set("Content-Type", contentType)
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(f.Status)
	io.WriteString(w, body)
}

// serveCompletion answers an unstreamed chat completion in one body.
func (s *Server) serveCompletion(w http.ResponseWriter, req Request, resp Response) {
	data, err := json.Marshal(completionFor(req, resp))
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("fakeopenai: encode completion: %v", err))
		return
	}
	data = s.applyDialect(resp.Dialect, data, "message")
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(data); err != nil || http.NewResponseController(w).Flush() != nil {
		return
	}
	if s.script.Delivered != nil {
		s.script.Delivered(req, resp)
	}
}

// wait sleeps for d (forever when d < 0) and reports whether it ran out,
// rather than the client leaving or the server closing.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	}
}

// dropConnection closes the TCP connection without a response, as a proxy
// or a crashing backend does.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		// RST rather than FIN: the harshest form a client meets.
		tcp.SetLinger(0)
	}
	conn.Close()
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, errorBody(status, message))
}

// unstreamed is a stream fault as an answer that is not streamed meets it:
// a stall hangs, a cut drops the connection, an error event is a 200 whose
// body is an error object (as gateways send).
func unstreamed(f Fault) Fault {
	switch {
	case f.Stall:
		return Fault{Hang: true}
	case f.Cut:
		return Fault{Drop: true}
	case f.StreamError != "":
		return Fault{Status: http.StatusOK, Body: errorBody(http.StatusBadGateway, f.StreamError)}
	}
	return f
}
