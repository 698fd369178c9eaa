package wire

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// errCallTimeout is the cause of a model call that outlived CallTimeout.
var errCallTimeout = errors.New("model call timed out")

// errNoChoices is a 2xx completion without choices; providers do this under
// load, so it is retried like a body that is not a completion.
var errNoChoices = errors.New("completion has no choices")

// Client makes one round's model calls, retrying transient failures in
// place (same round, same messages). Its calls are sequential.
type Client struct {
	cfg     Config
	client  *openai.Client
	capture *responseCapture
	dialect *dialect
	emit    func(Event)
	// carried holds what the Responses wire must send back with a turn.
	carried *responsesCarry
	// models is the primary model then the fallbacks; current indexes it.
	// The round stays on a fallback once it moved there.
	models  []string
	current int
}

// New is a client for one round; emit receives its events.
func New(cfg Config, emit func(Event)) *Client {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	capture := &responseCapture{doer: httpClient, dialect: newDialect(cfg)}
	if cfg.Stream || cfg.WireAPI == APIResponses {
		capture.idle = cfg.IdleTimeout
	}
	oc.HTTPClient = capture
	models := append([]string{cfg.Model}, cfg.FallbackModels...)
	return &Client{cfg: cfg, client: openai.NewClientWithConfig(oc), capture: capture, dialect: capture.dialect,
		emit: emit, carried: newResponsesCarry(), models: models}
}

// Model is the model the next request goes to: after a call, the one
// that answered it.
func (m *Client) Model() string { return m.models[m.current] }

// Complete sends req (Model set here) as model call step and returns the
// answer, which has at least one choice. Errors: ctx's own error when ctx
// ended; *ContextLengthError when the provider said the request is too
// long for the context; *RefusedError for another ordinary refusal; once
// transient retries (including per-call timeouts) are spent on the current
// model, the same request goes to the next fallback model with a retry
// budget of its own; after the last one *DeferredError (or, for a client
// that may not defer, *ModelUnavailableError). A deferrable client also
// defers at once on an exhausted quota and on a 429 or 503 that asks for a
// wait longer than MaxRetryAfter.
func (m *Client) Complete(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	for attempt := 1; ; attempt++ {
		req.Model = m.Model()
		resp, err := m.once(ctx, step, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return openai.ChatCompletionResponse{}, ctx.Err()
		}
		f := m.weigh(err, step)
		ev := Event{Kind: EventError, Step: step, Attempt: attempt, HTTPStatus: f.status, Transient: f.transient, Error: f.text, Model: req.Model}
		delay, _ := ProviderDelay(f.status, f.header, time.Now())
		if d := m.deferNow(f, delay, req.Model); d != nil {
			m.emit(ev)
			return openai.ChatCompletionResponse{}, d
		}
		if !f.transient {
			m.emit(ev)
			if f.tooLong {
				return openai.ChatCompletionResponse{}, &ContextLengthError{Step: step, Text: f.text}
			}
			return openai.ChatCompletionResponse{}, &RefusedError{Step: step, Text: f.text}
		}
		if attempt > m.cfg.TransientRetries {
			m.emit(ev)
			if m.current+1 < len(m.models) {
				// The same conversation goes on with the next model, which
				// gets a retry budget of its own.
				m.current++
				m.emit(Event{Kind: EventFallback, Step: step, Model: m.Model(), Error: f.text})
				attempt = 0
				continue
			}
			if m.cfg.Deferrable {
				return openai.ChatCompletionResponse{}, &DeferredError{Reason: deferReason(f.status), RetryAfter: delay, Model: req.Model, Last: f.text}
			}
			return openai.ChatCompletionResponse{}, &ModelUnavailableError{Attempts: attempt, Last: f.text}
		}
		wait := backoff(attempt, f.status, f.header, m.cfg)
		ev.RetryInMs = wait.Milliseconds()
		m.emit(ev)
		traceRetry(ctx, attempt, ev.HTTPStatus)
		if err := sleep(ctx, wait); err != nil {
			return openai.ChatCompletionResponse{}, ctx.Err()
		}
	}
}

// failure is one failed attempt as Complete weighs it.
type failure struct {
	text                      string // API key redacted
	transient, tooLong, quota bool
	status                    int // the HTTP status, 0 when none arrived
	header                    http.Header
}

// weigh classifies a failed attempt of model call step. A provider that
// hangs (the per-call timeout, an idle stream) is a transient fault like a
// dropped connection: retried in place, then ModelUnavailable.
func (m *Client) weigh(err error, step int) failure {
	switch {
	case errors.Is(err, errModelIdle):
		return failure{text: fmt.Sprintf("model call %d: the stream sent no byte for %s", step, m.cfg.IdleTimeout), transient: true}
	case errors.Is(err, errCallTimeout):
		return failure{text: fmt.Sprintf("model call %d exceeded the per-call timeout of %s", step, m.cfg.CallTimeout), transient: true}
	}
	seen, header := m.capture.last()
	f := classify(err, seen)
	return failure{text: f.describe(m.cfg.APIKey), transient: f.transient, tooLong: isContextLength(f), quota: f.quota(),
		status: f.status, header: header}
}

// deferNow is the deferral a deferrable client ends a call with at once,
// without retrying: on an exhausted quota, and on a 429 or 503 that asks
// for a wait (delay) longer than MaxRetryAfter. nil: no deferral.
func (m *Client) deferNow(f failure, delay time.Duration, model string) *DeferredError {
	switch {
	case !m.cfg.Deferrable:
		return nil
	case f.quota:
		return &DeferredError{Reason: DeferQuota, RetryAfter: delay, Model: model, Last: f.text}
	case f.transient && delay > m.cfg.MaxRetryAfter &&
		(f.status == http.StatusTooManyRequests || f.status == http.StatusServiceUnavailable):
		return &DeferredError{Reason: deferReason(f.status), RetryAfter: delay, Model: model, Last: f.text}
	}
	return nil
}

// deferReason names why transient trouble deferred a round: a 429 is a
// rate limit, anything else (5xx, network, timeouts) an outage.
func deferReason(status int) string {
	if status == http.StatusTooManyRequests {
		return DeferRateLimited
	}
	return DeferUnavailable
}

// once is one transport attempt under the per-call timeout, on the
// configured wire; the answer is settled by the dialect layer (text tool
// calls, ids) whatever wire brought it.
func (m *Client) once(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, m.cfg.CallTimeout, errCallTimeout)
	defer cancel()
	m.capture.reset()
	shapeRequest(&req, m.cfg)
	var (
		resp openai.ChatCompletionResponse
		err  error
	)
	switch {
	case m.cfg.WireAPI == APIResponses:
		resp, err = m.respond(callCtx, step, req)
	case m.cfg.Stream:
		resp, err = m.streamChat(callCtx, step, req)
	default:
		resp, err = m.client.CreateChatCompletion(callCtx, req)
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(callCtx), errCallTimeout) {
			return resp, fmt.Errorf("%w after %s", errCallTimeout, m.cfg.CallTimeout)
		}
		return resp, err
	}
	if len(resp.Choices) == 0 {
		return resp, errNoChoices
	}
	settleAnswer(&resp, req.Tools)
	return resp, nil
}
