package agent

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

// modelClient makes one session's model calls, retrying transient failures
// in place (same session, same messages).
type modelClient struct {
	cfg     Config
	client  *openai.Client
	capture *responseCapture
	dialect *dialect
	emit    func(Event)
	// carried holds what the Responses wire must send back with a turn.
	carried *responsesCarry
	// truncationWarned: the provider's silent truncation was reported.
	truncationWarned bool
	// boundsPrompt is the prompt size of the last answered request as the
	// bounds count it: the provider's figure, or the estimate when that is
	// far larger (0: not reported).
	boundsPrompt int
	// models is the primary model then the fallbacks; current indexes it.
	// The session stays on a fallback once it moved there.
	models  []string
	current int
	// deferrable: provider limits end the session as deferred instead of
	// failing it (off for runs whose limits predate deferrals).
	deferrable bool
}

func newModelClient(cfg Config, deferrable bool, emit func(Event)) *modelClient {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	capture := &responseCapture{doer: httpClient, dialect: newDialect(cfg)}
	if cfg.Stream || cfg.WireAPI == WireResponses {
		capture.idle = cfg.IdleTimeout
	}
	oc.HTTPClient = capture
	models := append([]string{cfg.Model}, cfg.FallbackModels...)
	return &modelClient{cfg: cfg, client: openai.NewClientWithConfig(oc), capture: capture, dialect: capture.dialect,
		emit: emit, carried: newResponsesCarry(), models: models, deferrable: deferrable}
}

// model is the model the next request goes to.
func (m *modelClient) model() string { return m.models[m.current] }

// complete returns the first choice of a successful call. Errors: ctx's own
// error when ctx ended; *contextLengthError when the provider said the
// request is too long for the context; *ChildFailure for another ordinary
// refusal; once transient retries (including per-call timeouts) are spent
// on the current model, the same request goes to the next fallback model
// with a retry budget of its own; after the last one *DeferredError (or,
// for a session that may not defer, *ModelUnavailableError). A deferrable
// session also defers at once on an exhausted quota and on a 429 or 503
// that asks for a wait longer than MaxRetryAfter.
func (m *modelClient) complete(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	for attempt := 1; ; attempt++ {
		req.Model = m.model()
		resp, err := m.once(ctx, step, req)
		if err == nil {
			m.checkTruncation(step, req, &resp)
			return resp, nil
		}
		if ctx.Err() != nil {
			return openai.ChatCompletionResponse{}, ctx.Err()
		}
		var (
			text      string
			transient bool
			tooLong   bool
			quota     bool
			status    int
			header    http.Header
			ev        Event
		)
		if errors.Is(err, errCallTimeout) || errors.Is(err, errModelIdle) {
			// A provider that hangs is a transient fault like a dropped
			// connection: retried in the same session, then ModelUnavailable.
			text = fmt.Sprintf("model call %d exceeded the per-call timeout of %s", step, m.cfg.CallTimeout)
			if errors.Is(err, errModelIdle) {
				text = fmt.Sprintf("model call %d: the stream sent no byte for %s", step, m.cfg.IdleTimeout)
			}
			transient = true
			ev = Event{Kind: EventModelError, Step: step, Attempt: attempt, Transient: true, Error: text, Model: req.Model}
		} else {
			var seen int
			seen, header = m.capture.last()
			f := classify(err, seen)
			text, transient, tooLong, quota, status = f.describe(m.cfg.APIKey), f.transient, isContextLength(f), f.quota(), f.status
			ev = Event{Kind: EventModelError, Step: step, Attempt: attempt, HTTPStatus: f.status, Transient: f.transient, Error: text, Model: req.Model}
		}
		delay, hasDelay := providerDelay(status, header, time.Now())
		if !hasDelay {
			delay = 0
		}
		if quota && m.deferrable {
			m.emit(ev)
			return openai.ChatCompletionResponse{}, &DeferredError{Reason: DeferQuota, RetryAfter: delay, Model: req.Model, Last: text}
		}
		if transient && m.deferrable && delay > m.cfg.MaxRetryAfter &&
			(status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
			m.emit(ev)
			return openai.ChatCompletionResponse{}, &DeferredError{Reason: deferReason(status), RetryAfter: delay, Model: req.Model, Last: text}
		}
		if !transient {
			m.emit(ev)
			if tooLong {
				return openai.ChatCompletionResponse{}, &contextLengthError{step: step, text: text}
			}
			return openai.ChatCompletionResponse{}, childFailure("model call %d failed: %s", step, text)
		}
		if attempt > m.cfg.TransientRetries {
			m.emit(ev)
			if m.current+1 < len(m.models) {
				// The same conversation goes on with the next model, which
				// gets a retry budget of its own.
				m.current++
				m.emit(Event{Kind: EventModelFallback, Step: step, Model: m.model(), Error: text})
				attempt = 0
				continue
			}
			if m.deferrable {
				return openai.ChatCompletionResponse{}, &DeferredError{Reason: deferReason(status), RetryAfter: delay, Model: req.Model, Last: text}
			}
			return openai.ChatCompletionResponse{}, &ModelUnavailableError{Attempts: attempt, Last: text}
		}
		wait := backoff(attempt, status, header, m.cfg)
		ev.RetryInMs = wait.Milliseconds()
		m.emit(ev)
		traceRetry(ctx, attempt, ev.HTTPStatus)
		if err := sleep(ctx, wait); err != nil {
			return openai.ChatCompletionResponse{}, ctx.Err()
		}
	}
}

// deferReason names why transient trouble deferred a round: a 429 is a
// rate limit, anything else (5xx, network, timeouts) an outage.
func deferReason(status int) string {
	if status == http.StatusTooManyRequests {
		return DeferRateLimited
	}
	return DeferUnavailable
}

// contextLengthError is a provider's refusal of a request as too long for
// the model's context; the session answers the first one with a compacted
// request.
type contextLengthError struct {
	step int
	text string
}

func (e *contextLengthError) Error() string {
	return fmt.Sprintf("model call %d was refused as too long for the model's context: %s", e.step, e.text)
}

// once is one transport attempt under the per-call timeout, on the
// configured wire; the answer is settled by the dialect layer (text tool
// calls, ids) whatever wire brought it.
func (m *modelClient) once(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, m.cfg.CallTimeout, errCallTimeout)
	defer cancel()
	m.capture.reset()
	shapeRequest(&req, m.cfg)
	var (
		resp openai.ChatCompletionResponse
		err  error
	)
	switch {
	case m.cfg.WireAPI == WireResponses:
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

// durationMs is d in whole milliseconds, at least 1 for any positive d.
func durationMs(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
