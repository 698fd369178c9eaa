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
	emit    func(Event)
}

func newModelClient(cfg Config, emit func(Event)) *modelClient {
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	capture := &responseCapture{doer: httpClient}
	oc.HTTPClient = capture
	return &modelClient{cfg: cfg, client: openai.NewClientWithConfig(oc), capture: capture, emit: emit}
}

// complete returns the first choice of a successful call. Errors: ctx's own
// error when ctx ended; *contextLengthError when the provider said the
// request is too long for the context; *ChildFailure for another ordinary
// refusal; *ModelUnavailableError once transient retries (including
// per-call timeouts) are spent.
func (m *modelClient) complete(ctx context.Context, step int, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	for attempt := 1; ; attempt++ {
		resp, err := m.once(ctx, req)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return openai.ChatCompletionResponse{}, ctx.Err()
		}
		var (
			text      string
			transient bool
			tooLong   bool
			header    http.Header
			ev        Event
		)
		if errors.Is(err, errCallTimeout) {
			// A provider that hangs is a transient fault like a dropped
			// connection: retried in the same session, then ModelUnavailable.
			text = fmt.Sprintf("model call %d exceeded the per-call timeout of %s", step, m.cfg.CallTimeout)
			transient = true
			ev = Event{Kind: EventModelError, Step: step, Attempt: attempt, Transient: true, Error: text}
		} else {
			var status int
			status, header = m.capture.last()
			f := classify(err, status)
			text, transient, tooLong = f.describe(m.cfg.APIKey), f.transient, isContextLength(f)
			ev = Event{Kind: EventModelError, Step: step, Attempt: attempt, HTTPStatus: f.status, Transient: f.transient, Error: text}
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
			return openai.ChatCompletionResponse{}, &ModelUnavailableError{Attempts: attempt, Last: text}
		}
		wait := backoff(attempt, header, m.cfg)
		ev.RetryInMs = wait.Milliseconds()
		m.emit(ev)
		traceRetry(ctx, attempt, ev.HTTPStatus)
		if err := sleep(ctx, wait); err != nil {
			return openai.ChatCompletionResponse{}, ctx.Err()
		}
	}
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

// once is one transport attempt under the per-call timeout.
func (m *modelClient) once(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, m.cfg.CallTimeout, errCallTimeout)
	defer cancel()
	m.capture.reset()
	resp, err := m.client.CreateChatCompletion(callCtx, req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(callCtx), errCallTimeout) {
			return resp, fmt.Errorf("%w after %s", errCallTimeout, m.cfg.CallTimeout)
		}
		return resp, err
	}
	if len(resp.Choices) == 0 {
		return resp, errNoChoices
	}
	return resp, nil
}

// durationMs is d in whole milliseconds, at least 1 for any positive d.
func durationMs(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
