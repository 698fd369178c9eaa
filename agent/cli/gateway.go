package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/usage"
)

// Defaults of RALPH_AGENT_MAX_INFLIGHT and RALPH_AGENT_MAX_REQUEST_MB.
const (
	DefaultMaxInflight  = 4
	DefaultMaxRequestMB = 16
)

// charsPerToken estimates a request's tokens from its size.
const charsPerToken = 4

// gateway is the model endpoint a CLI sees: it takes the attempt's token,
// applies the round's bounds, and forwards to the provider with the real
// key, reading every answer's usage from the stream (docs/agents.md).
type gateway struct {
	api        apiSpec
	desk       *agent.Desk
	cfg        agent.Config // the endpoint's model, retries, tracing
	upstream   string       // the provider's base URL (ending in /v1)
	key        string       // the provider key: sent upstream, never to the CLI
	token      string       // the attempt's credential
	reportTool string       // the finishing tool's name
	deferrable bool
	ctx        context.Context // the attempt's: its end aborts upstream requests
	client     *http.Client
	models     []string // the primary model, then the fallbacks
	maxBody    int64    // RALPH_AGENT_MAX_REQUEST_MB in bytes
	inflight   chan struct{}

	mu    sync.Mutex
	fatal error // what ended the round at the gateway (nil: nothing)
	// current indexes models: requests go there, and stay on a fallback
	// once one took over, as in the builtin session.
	current  int
	failed   chan struct{} // closed with fatal
	active   chan struct{} // a signal per request (the idle watch)
	handlers gate          // requests being served; none once shut
	// relayed counts the finishing tool's calls in relayed answers, by
	// canonical arguments: each vouches for one submission.
	relayed map[string]int
	// relaying counts answers being relayed: a CLI may run a tool call as
	// soon as its block streamed, before the answer's last event, where
	// the gateway notes the calls (vouch waits for them).
	relaying int
}

// vouchWait bounds how long a submission waits for the answers being
// relayed to be noted.
const vouchWait = 5 * time.Second

// gatewayLimits bound what one attempt may have the gateway hold.
type gatewayLimits struct {
	inflight int   // requests in flight
	body     int64 // bytes of one request body
}

func newGateway(ctx context.Context, api apiSpec, desk *agent.Desk, cfg agent.Config, upstream, key, token, tool string, deferrable bool, lim gatewayLimits) *gateway {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &gateway{api: api, desk: desk, cfg: cfg, upstream: strings.TrimRight(upstream, "/"), key: key, token: token,
		reportTool: tool, deferrable: deferrable, ctx: ctx, client: client, models: append([]string{cfg.Model}, cfg.FallbackModels...),
		maxBody: lim.body, inflight: make(chan struct{}, lim.inflight),
		failed: make(chan struct{}), active: make(chan struct{}, 1), relayed: map[string]int{}}
}

// note keeps the finishing tool's calls of a relayed answer.
func (g *gateway) note(calls []toolCall) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range calls {
		if strings.HasSuffix(c.name, g.reportTool) {
			g.relayed[canonicalArgs(c.args)]++
		}
	}
}

// vouch reports whether a relayed answer called the finishing tool with
// args, using that call up: it vouches for one submission only.
func (g *gateway) vouch(args string) bool {
	c := canonicalArgs(args)
	deadline := time.Now().Add(vouchWait)
	for {
		g.mu.Lock()
		if g.relayed[c] > 0 {
			g.relayed[c]--
			g.mu.Unlock()
			return true
		}
		busy := g.relaying > 0
		g.mu.Unlock()
		if !busy || time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fail ends the round at the gateway with err (the first one wins).
func (g *gateway) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fatal == nil {
		g.fatal = err
		close(g.failed)
	}
}

func (g *gateway) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fatal
}

func (g *gateway) authorized(r *http.Request) bool {
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if k := r.Header.Get("x-api-key"); k != "" {
		got = k
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(g.token)) == 1
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The server may still hand over a request read before it closed.
	if !g.handlers.enter() {
		writeError(w, http.StatusServiceUnavailable, "the round is over")
		return
	}
	defer g.handlers.leave()
	select {
	case g.active <- struct{}{}:
	default:
	}
	switch {
	case r.Method == http.MethodHead:
		return // a preconnect
	case !g.authorized(r):
		writeError(w, http.StatusUnauthorized, "the gateway takes only this attempt's token")
		return
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]string{{"id": g.cfg.Model, "object": "model"}}})
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1"+g.api.path:
		writeError(w, http.StatusNotFound, "the gateway serves POST /v1"+g.api.path)
		return
	}
	// The bound in flight holds before the body is read: a waiting
	// request holds nothing of the worker's memory.
	select {
	case g.inflight <- struct{}{}:
		defer func() { <-g.inflight }()
	case <-r.Context().Done():
		return
	case <-g.ctx.Done():
		writeError(w, http.StatusServiceUnavailable, "the round is over")
		return
	}
	raw, err := readBody(w, r, g.maxBody)
	if errors.Is(err, errTooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body passes RALPH_AGENT_MAX_REQUEST_MB (%d MB)", g.maxBody>>20))
		return
	}
	var body map[string]json.RawMessage
	if err == nil {
		body, err = splitObject(raw)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "the request body is not a JSON object")
		return
	}
	if err := onlyOne(body); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := g.err(); err != nil {
		writeError(w, http.StatusServiceUnavailable, "the round is over")
		return
	}
	estimate := len(raw) / charsPerToken
	f, err := g.desk.Forward(estimate)
	if err != nil {
		g.fail(err)
		writeError(w, http.StatusInternalServerError, "the hand-off could not be prepared")
		return
	}
	if f.Refused != "" {
		writeError(w, http.StatusTooManyRequests, "not forwarded: "+f.Refused)
		return
	}
	defer g.desk.Release(f)
	if f.Notice != "" {
		g.api.reportOnly(body, g.reportTool, f.Notice)
	}
	g.api.prepare(body)
	if f.MaxOutput > 0 {
		lowerOutput(body, f.MaxOutput, g.api.outputFields)
	}
	g.forward(r.Context(), w, r.Header, body, estimate)
}

// forward sends the request on the current model, then on the fallbacks,
// each with its retries (a request still retrying a model another one left
// follows it); a 401 or 403 ends the round, a "not now" past the
// retries defers it (when the round may be deferred). ctx is the CLI's:
// once it leaves no retry follows, but an answer on its way is read to its
// end upstream (only the attempt's end cuts it), so it is counted.
func (g *gateway) forward(ctx context.Context, w http.ResponseWriter, h http.Header, body map[string]json.RawMessage, estimate int) {
	var last string
	var lastDelay time.Duration
	reason := agent.DeferUnavailable
	for i, more := g.currentModel(), true; more; i, more = g.moveOn(i, last) {
		model := g.models[i]
		body["model"], _ = json.Marshal(model)
		for try := 0; try <= g.cfg.TransientRetries && g.currentModel() == i; try++ {
			if ctx.Err() != nil {
				return
			}
			resp, err := g.send(g.ctx, h, body, model)
			if g.ctx.Err() != nil {
				if resp != nil {
					resp.Body.Close()
				}
				return
			}
			if err != nil {
				last = agent.Redact(err.Error(), g.key)
				g.sleep(ctx, g.backoff(try))
				continue
			}
			done, delay, why := g.answer(w, resp, model, estimate)
			if done {
				return
			}
			last, lastDelay = why, delay
			if resp.StatusCode == http.StatusTooManyRequests {
				reason = agent.DeferRateLimited
			}
			// Like the builtin session: only a round that may be deferred
			// ends on a long wait or a quota; any other retries, waiting
			// at most MaxRetryAfter.
			if g.deferrable && (delay > g.cfg.MaxRetryAfter || strings.Contains(why, "insufficient_quota")) {
				g.spent(w, reason, delay, model, why, try+1)
				return
			}
			g.sleep(ctx, max(min(delay, g.cfg.MaxRetryAfter), g.backoff(try)))
		}
	}
	g.spent(w, reason, lastDelay, g.models[len(g.models)-1], last, (g.cfg.TransientRetries+1)*len(g.models))
}

func (g *gateway) currentModel() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.current
}

// moveOn is the model after models[from], whose retries are spent (false:
// none is left); this and every later request go there. A request that
// ran concurrently may have moved on already.
func (g *gateway) moveOn(from int, why string) (int, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.current == from {
		if from+1 == len(g.models) {
			return from, false
		}
		g.current++
		g.desk.Emit(agent.Event{Kind: agent.EventModelFallback, Model: g.models[g.current], Error: why})
	}
	return g.current, true
}

// spent ends the round once the provider kept saying "not now".
func (g *gateway) spent(w http.ResponseWriter, reason string, delay time.Duration, model, last string, attempts int) {
	if strings.Contains(last, "insufficient_quota") {
		reason = agent.DeferQuota
	}
	if g.deferrable {
		g.fail(&agent.DeferredError{Reason: reason, RetryAfter: delay, Model: model, Last: last})
	} else {
		g.fail(&agent.ModelUnavailableError{Attempts: attempts, Last: last})
	}
	writeError(w, http.StatusServiceUnavailable, "the model provider is unavailable; the round ends")
}

func (g *gateway) backoff(try int) time.Duration {
	return min(g.cfg.RetryBaseDelay<<try, g.cfg.RetryMaxDelay)
}

// sleep waits d, or less once the CLI left (ctx) or the attempt ends.
func (g *gateway) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-g.ctx.Done():
	}
}

// send is one upstream request, under a chat span.
func (g *gateway) send(ctx context.Context, h http.Header, body map[string]json.RawMessage, model string) (*http.Response, error) {
	g.desk.Emit(agent.Event{Kind: agent.EventModelRequest, Model: model, Tools: toolNamesOf(body["tools"])})
	data, n := objectReader(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.upstream+g.api.path, data)
	if err != nil {
		return nil, err
	}
	req.ContentLength = n
	for _, name := range []string{"Content-Type", "Accept", "anthropic-version", "anthropic-beta"} {
		if v := h.Get(name); v != "" {
			req.Header.Set(name, v)
		}
	}
	if g.api.provider == "anthropic" {
		req.Header.Set("x-api-key", g.key)
		if req.Header.Get("anthropic-version") == "" {
			req.Header.Set("anthropic-version", "2023-06-01")
		}
	} else {
		req.Header.Set("Authorization", "Bearer "+g.key)
	}
	return g.client.Do(req)
}

// answer relays one upstream answer: a success to the CLI (done), a 401 or
// 403 to the CLI, ending the round (done), another refusal to the CLI
// (done), or a transient failure the caller retries (the provider's delay
// and the error text).
func (g *gateway) answer(w http.ResponseWriter, resp *http.Response, model string, estimate int) (bool, time.Duration, string) {
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		g.relay(w, resp, model, estimate)
		return true, 0, ""
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	// A provider may echo the key it was sent: the CLI's shell must not
	// read it in an error either.
	text := agent.Redact(string(raw), g.key)
	why := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(text))
	g.desk.Emit(agent.Event{Kind: agent.EventModelError, Model: model, Error: why})
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests || s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500:
		delay, _ := agent.ProviderDelay(s, resp.Header, time.Now())
		return false, delay, why
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		g.fail(agent.ChildFailureOf("the model provider refused the request: " + why))
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.WriteString(w, text)
	return true, 0, ""
}

// relay passes a 200 answer on event by event; the answer's usage and its
// calls of the finishing tool are recorded (and so heartbeated) before its
// last event reaches the CLI, so the CLI's next request and its report
// always come after them. An answer the CLI left is still read to its end;
// one cut before its usage (or one without any) is booked under
// usage.estimated: the request's estimate and the tokens relayed.
func (g *gateway) relay(w http.ResponseWriter, resp *http.Response, model string, estimate int) {
	g.mu.Lock()
	g.relaying++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.relaying--
		g.mu.Unlock()
	}()
	started := time.Now()
	_, span := g.cfg.Tracing.StartChat(g.ctx, model)
	defer span.End()
	span.SetAttributes(tracing.AttrProvider.String(g.api.provider))
	rd := g.api.newReader()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	recorded, relayed := false, 0
	record := func() {
		if recorded {
			return
		}
		recorded = true
		a := rd.result()
		if a.model == "" {
			a.model = model
		}
		if a.usage.PromptTokens == 0 && a.usage.CompletionTokens == 0 {
			// No provider figure: booked apart, as the estimate (usage.estimated).
			a.usage.Estimated = usage.Counts{ModelCalls: 1, PromptTokens: estimate, CompletionTokens: max(relayed/charsPerToken, 1)}
		}
		g.desk.ModelCall(a.usage, a.model, agent.Event{FinishReason: a.finish, ContextTokens: a.usage.PromptTokens + a.usage.Estimated.PromptTokens,
			DurationMs: time.Since(started).Milliseconds()})
		traceAnswer(span, a)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, err := io.ReadAll(resp.Body)
		relayed = len(data)
		if rd.event(data) {
			g.note(rd.calls())
		}
		record()
		_, _ = w.Write(data)
		if err != nil {
			tracing.Fail(span, "stream", err.Error())
		}
		return
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var event bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		event.Write(line)
		relayed += len(line)
		if bytes.Equal(bytes.TrimSpace(line), nil) && event.Len() > 0 || err != nil {
			if sseFinal(rd, event.Bytes()) {
				g.note(rd.calls())
				record()
			}
			_, _ = w.Write(event.Bytes())
			flush()
			event.Reset()
		}
		if err != nil {
			break
		}
	}
	record() // a stream cut before its last event still spent this
}

// sseFinal feeds the data lines of one server-sent event to rd.
func sseFinal(rd streamReader, event []byte) bool {
	final := false
	for _, line := range bytes.Split(event, []byte("\n")) {
		if data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			final = rd.event(bytes.TrimSpace(data)) || final
		}
	}
	return final
}

func traceAnswer(span trace.Span, a answerRead) {
	span.SetAttributes(tracing.AttrResponseModel.String(a.model), tracing.AttrInputTokens.Int(a.usage.PromptTokens),
		tracing.AttrOutputTokens.Int(a.usage.CompletionTokens))
	if a.finish != "" {
		span.SetAttributes(tracing.AttrFinishReasons.StringSlice([]string{a.finish}))
	}
}

func toolNamesOf(raw json.RawMessage) []string {
	var tools []map[string]json.RawMessage
	_ = json.Unmarshal(raw, &tools)
	var names []string
	for _, t := range tools {
		if n := str(t["name"]); n != "" {
			names = append(names, n)
		} else if n := nested(t, "function", "name"); n != "" {
			names = append(names, n)
		}
	}
	return names
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": "gateway_error", "message": message}})
}
