package agent

import (
	"context"
	"errors"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/wire"
)

// modelClient is the session's side of the model wire (agent/wire): the
// wire's events as the session's, a refusal as a child failure, and the
// prompt size as the bounds count it.
type modelClient struct {
	wire *wire.Client
	emit func(Event)
	// truncationWarned: the provider's silent truncation was reported.
	truncationWarned bool
	// boundsPrompt is the prompt size of the last answered request as the
	// bounds count it: the provider's figure, or the estimate when that is
	// far larger (0: not reported).
	boundsPrompt int
}

func newModelClient(cfg Config, deferrable bool, emit func(Event)) *modelClient {
	m := &modelClient{emit: emit}
	m.wire = wire.New(cfg.wire(deferrable), m.observe)
	return m
}

// wire is the model wire's part of the settings.
func (c Config) wire(deferrable bool) wire.Config {
	return wire.Config{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model, FallbackModels: c.FallbackModels,
		CallTimeout: c.CallTimeout, TransientRetries: c.TransientRetries, MaxRetryAfter: c.MaxRetryAfter,
		RetryBaseDelay: c.RetryBaseDelay, RetryMaxDelay: c.RetryMaxDelay, EchoReasoning: c.EchoReasoning,
		Stream: c.Stream, IdleTimeout: c.IdleTimeout, WireAPI: c.WireAPI, ReasoningEffort: c.ReasoningEffort,
		ExtraBody: c.ExtraBody, MaxTokensFieldName: c.MaxTokensFieldName, HTTPClient: c.HTTPClient,
		Deferrable: deferrable}
}

// model is the model the next request goes to.
func (m *modelClient) model() string { return m.wire.Model() }

// complete is wire.Client.Complete, with the provider's ordinary refusal
// as a *ChildFailure; *wire.ContextLengthError, *DeferredError and
// *ModelUnavailableError pass through. toolTokens estimates the offered
// definitions (toolbox.offerTokens, made once per worker: encoding them
// again on every call cost about 0.2 ms).
func (m *modelClient) complete(ctx context.Context, step int, req openai.ChatCompletionRequest, toolTokens int) (openai.ChatCompletionResponse, error) {
	resp, err := m.wire.Complete(ctx, step, req)
	var refused *wire.RefusedError
	if errors.As(err, &refused) {
		return resp, childFailure("%s", refused.Error())
	}
	if err == nil {
		m.checkTruncation(step, req.Messages, toolTokens, resp)
	}
	return resp, err
}

// observe passes the wire's events on as the session's.
func (m *modelClient) observe(e wire.Event) {
	m.emit(Event{Kind: EventKind(e.Kind), Step: e.Step, Attempt: e.Attempt, Model: e.Model, HTTPStatus: e.HTTPStatus,
		Transient: e.Transient, Error: e.Error, RetryInMs: e.RetryInMs,
		StreamedTokens: (e.StreamedChars + charsPerToken - 1) / charsPerToken, FirstTokenMs: e.FirstTokenMs})
}

// truncationRatio: a provider that counts fewer than this share of the
// estimated prompt dropped part of it (Ollama cuts silently at its default
// context of 2048 or 4096 tokens).
const truncationRatio = 0.75

// checkTruncation catches a provider that reports far fewer prompt tokens
// than were sent: it warns once per session, naming the setting to raise,
// and boundsPrompt keeps the larger figure for the bounds (the provider's
// own count of a truncated prompt would hide that the context is full); the
// usage stays what the provider counted.
func (m *modelClient) checkTruncation(step int, msgs []openai.ChatCompletionMessage, toolTokens int, resp openai.ChatCompletionResponse) {
	reported := resp.Usage.PromptTokens
	m.boundsPrompt = reported
	if reported == 0 {
		return
	}
	estimate := messagesTokens(msgs) + toolTokens
	if float64(reported) >= truncationRatio*float64(estimate) {
		return
	}
	if !m.truncationWarned {
		m.truncationWarned = true
		m.emit(Event{Kind: EventModelWarning, Step: step, Model: m.model(), Error: fmt.Sprintf(
			"the provider counted %d prompt tokens for a request of about %d: it probably truncated the prompt to a small context "+
				"(Ollama: raise OLLAMA_CONTEXT_LENGTH on the server to at least RALPH_CONTEXT_TOKENS); the estimate drives the context bounds", reported, estimate)})
	}
	m.boundsPrompt = estimate
}
