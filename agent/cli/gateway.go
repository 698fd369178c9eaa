package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// maxRequestBytes bounds one request the CLI sends the gateway.
const maxRequestBytes = 64 << 20

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

	mu    sync.Mutex
	fatal error // what ended the round at the gateway (nil: nothing)
	// current indexes models: requests go there, and stay on a fallback
	// once one took over, as in the builtin session.
	current int
	failed  chan struct{} // closed with fatal
	active  chan struct{} // a signal per request (the idle watch)
}

func newGateway(ctx context.Context, api apiSpec, desk *agent.Desk, cfg agent.Config, upstream, key, token, tool string, deferrable bool) *gateway {
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &gateway{api: api, desk: desk, cfg: cfg, upstream: strings.TrimRight(upstream, "/"), key: key, token: token,
		reportTool: tool, deferrable: deferrable, ctx: ctx, client: client, models: append([]string{cfg.Model}, cfg.FallbackModels...),
		failed: make(chan struct{}), active: make(chan struct{}, 1)}
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
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	var body map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(raw, &body)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "the request body is not a JSON object")
		return
	}
	if err := g.err(); err != nil {
		writeError(w, http.StatusServiceUnavailable, "the round is over")
		return
	}
	if !g.desk.CallsLeft() {
		g.fail(agent.ChildFailureOf(fmt.Sprintf("no valid report within the bound of %d model calls", g.cfg.MaxModelCalls)))
		writeError(w, http.StatusTooManyRequests, "the round's model calls are spent")
		return
	}
	notice, err := g.desk.HandoffDue(len(raw) / 4)
	if err != nil {
		g.fail(err)
		writeError(w, http.StatusInternalServerError, "the hand-off could not be prepared")
		return
	}
	if notice != "" {
		g.api.reportOnly(body, g.reportTool, notice)
	}
	g.api.prepare(body)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(g.ctx, cancel)()
	g.forward(ctx, w, r.Header, body)
}

// forward sends the request on the current model, then on the fallbacks,
// each with its retries (a request still retrying a model another one left
// follows it); a 401 or 403 ends the round, a "not now" past the
// retries defers it (when the round may be deferred).
func (g *gateway) forward(ctx context.Context, w http.ResponseWriter, h http.Header, body map[string]json.RawMessage) {
	var last string
	var lastDelay time.Duration
	reason := agent.DeferUnavailable
	for i, more := g.currentModel(), true; more; i, more = g.moveOn(i, last) {
		model := g.models[i]
		body["model"], _ = json.Marshal(model)
		for try := 0; try <= g.cfg.TransientRetries && g.currentModel() == i; try++ {
			resp, err := g.send(ctx, h, body, model)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				last = agent.Redact(err.Error(), g.key)
				g.sleep(ctx, g.backoff(try))
				continue
			}
			done, delay, why := g.answer(ctx, w, resp, model)
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

func (g *gateway) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// send is one upstream request, under a chat span.
func (g *gateway) send(ctx context.Context, h http.Header, body map[string]json.RawMessage, model string) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	g.desk.Emit(agent.Event{Kind: agent.EventModelRequest, Model: model, Tools: toolNamesOf(body["tools"])})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.upstream+g.api.path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
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
func (g *gateway) answer(ctx context.Context, w http.ResponseWriter, resp *http.Response, model string) (bool, time.Duration, string) {
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		g.relay(ctx, w, resp, model)
		return true, 0, ""
	}
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	why := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, agent.Redact(strings.TrimSpace(string(text)), g.key))
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
	_, _ = w.Write(text)
	return true, 0, ""
}

// relay passes a 200 answer on event by event; the answer's usage is
// recorded (and so heartbeated) before its last event reaches the CLI, so
// the CLI's next request always comes after it.
func (g *gateway) relay(ctx context.Context, w http.ResponseWriter, resp *http.Response, model string) {
	started := time.Now()
	_, span := g.cfg.Tracing.StartChat(ctx, model)
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
	recorded := false
	record := func() {
		if recorded {
			return
		}
		recorded = true
		a := rd.result()
		if a.model == "" {
			a.model = model
		}
		g.desk.ModelCall(a.usage, a.model, agent.Event{FinishReason: a.finish, ContextTokens: a.usage.PromptTokens,
			DurationMs: time.Since(started).Milliseconds()})
		traceAnswer(span, a)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data, err := io.ReadAll(resp.Body)
		rd.event(data)
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
		if bytes.Equal(bytes.TrimSpace(line), nil) && event.Len() > 0 || err != nil {
			if sseFinal(rd, event.Bytes()) {
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
	if rd.result().usage.PromptTokens > 0 || rd.result().usage.CompletionTokens > 0 {
		record() // a stream cut before its last event still spent this
	}
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
