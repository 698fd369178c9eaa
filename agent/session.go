// Package agent runs one fresh coding-agent session: one round of a Ralph
// loop. A session starts with an empty conversation (the round prompt only),
// calls an OpenAI-compatible chat-completions endpoint, runs the workspace
// tools the model asks for, and ends when submit_report accepts a valid
// handoff report, or fails in a classified way. It has no Temporal imports:
// the activity adapts it, through Provider (provider.go), the round
// contract another agent can implement too.
//
// The round in parts: round.go holds the core every kind of agent stands
// on (request, role, workspace, bounds, the finishing tool and its checks,
// usage, the end), opened once by openRound for both RunSession's builtin
// model loop (this file) and a Desk (desk.go), the round of an agent
// outside the process. bounds.go holds what can end a round (the
// hand-offs, the budgets, the deadlines), role.go and review.go what a
// worker and a reviewer each make of it, toolbox.go the tools offered;
// the model loop adds conversation.go, the messages and what they cost,
// and dispatch.go, how a call is run.
package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/wire"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// RunSession runs one fresh session in req.Workspace.
//
// Errors, by kind:
//   - ctx.Err() when ctx ended (a cancel, or the caller's own deadline);
//   - *ChildFailure for an ordinary end without a valid report (refused
//     request, bounds spent, report never valid, round deadline reached);
//   - *DeferredError when the provider said "not now" (req.Deferrable);
//   - *ModelUnavailableError when transient model errors outlasted the retries;
//   - any other error: the harness itself failed (workspace, tools).
//
// Result.Usage is filled in every case.
func RunSession(ctx context.Context, cfg Config, req Request, obs Observer) (Result, error) {
	r, msgs, err := openRound(cfg, req, obs)
	if err != nil {
		return Result{}, err
	}
	defer r.ws.Close()
	s := newSession(r)
	s.conv.messages = msgs
	sctx := ctx
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadlineCause(ctx, req.Deadline, errRoundDeadline)
		defer cancel()
	}
	rep, err := s.run(sctx)
	return s.finish(rep, settle(ctx, sctx, err), s.model.model())
}

// session is the builtin agent's model loop in one round, standing on the
// round core: the conversation with the model, the model client, and the
// dispatch of the workspace tools it asks for (dispatch.go).
type session struct {
	*round
	model  *modelClient
	conv   conversation
	repeat repeatGuard
}

func newSession(r *round) *session {
	return &session{round: r, model: newModelClient(r.cfg, r.req.Deferrable, r.emit)}
}

func (s *session) run(ctx context.Context) (report.Report, error) {
	for s.bounds.callsLeft(s.calls) {
		step := s.calls + 1
		offered, size, err := s.prepare(step)
		if err != nil {
			return report.Report{}, err
		}
		msg, finish, err := s.callModel(ctx, step, offered, size)
		var tooLong *wire.ContextLengthError
		if errors.As(err, &tooLong) {
			if err := s.contextRefused(step, tooLong); err != nil {
				return report.Report{}, err
			}
			continue
		}
		if err != nil {
			return report.Report{}, err
		}
		if finish == openai.FinishReasonLength {
			if err := s.cutOff(step, msg); err != nil {
				return report.Report{}, err
			}
			continue
		}
		if len(msg.ToolCalls) == 0 {
			if err := s.answeredWithText(); err != nil {
				return report.Report{}, err
			}
			continue
		}
		s.bounds.toolsCalled()
		rep, done, err := s.runTools(ctx, step, msg.ToolCalls)
		if err != nil || done {
			return rep, err
		}
	}
	return report.Report{}, s.bounds.exhausted(s.lastRejection)
}

// prepare decides what the next request offers: it forces the hand-off
// when a bound is reached, and compacts the conversation when even the
// hand-off request would not fit the context (or the run's token budget).
// No request above the context window is ever sent: when the compacted
// request does not fit either, the round ends as a child failure.
func (s *session) prepare(step int) ([]openai.Tool, int, error) {
	spent := s.usage.Tokens()
	full := func() int { return s.nextRequestTokens(s.tools.all) }
	if bound := s.bounds.handoffDue(step, time.Now(), spent, full); bound != "" {
		if err := s.forceHandoff(step, bound); err != nil {
			return nil, 0, err
		}
	}
	offered := s.tools.offered(s.bounds.reportOnly)
	size := s.nextRequestTokens(offered)
	if s.bounds.needsCompaction(size, spent) {
		if err := s.compact(s.bounds.forced); err != nil {
			return nil, 0, err
		}
		offered = s.tools.offered(s.bounds.reportOnly)
		size = s.nextRequestTokens(offered)
	}
	if err := s.bounds.fits(size); err != nil {
		return nil, 0, err
	}
	return offered, size, nil
}

// contextRefused answers the provider's first context-length refusal with
// the compacted hand-off request; a second one (or one of the compacted
// request itself) ends the round.
func (s *session) contextRefused(step int, e *wire.ContextLengthError) error {
	announce, err := s.bounds.tooLong(e)
	if err != nil {
		return err
	}
	if announce {
		s.emit(Event{Kind: EventHandoff, Step: step, Bound: BoundContextError})
	}
	return s.compact(BoundContextError)
}

// callModel sends the whole conversation so far (only ever extended, except
// by the one compaction) and appends the model's answer to it.
func (s *session) callModel(ctx context.Context, step int, offered []openai.Tool, size int) (openai.ChatCompletionMessage, openai.FinishReason, error) {
	compacted := s.bounds.compacted && s.conv.sent == 0
	ev := Event{Kind: EventModelRequest, Step: step, Messages: s.conv.unsent(), Tools: toolNames(offered),
		ContextTokens: size, Compacted: compacted}
	if !s.conv.defsSent {
		ev.ToolDefinitions, s.conv.defsSent = bytes.Clone(s.tools.encoded), true // the event's own copy
	}
	s.emit(ev)

	started := time.Now()
	sentLen := len(s.conv.messages)
	ctx, span := s.cfg.Tracing.StartChat(ctx, s.cfg.Model)
	defer span.End()
	s.cfg.Tracing.Content(span, tracing.AttrInputMessages, s.conv.messages)
	resp, err := s.model.complete(ctx, step, openai.ChatCompletionRequest{
		Messages: slices.Clip(s.conv.messages),
		Tools:    offered,
		// The dialect layer sends it under the name the model reads
		// (outputLimitField); zero is left out of the request (no limit).
		MaxTokens: s.cfg.MaxOutputTokens, //lint:ignore SA1019 the field every OpenAI-compatible server reads

	}, s.tools.offerTokens(offered))
	if err != nil {
		s.traceModelError(span, err)
		return openai.ChatCompletionMessage{}, "", err
	}
	traceResponse(span, resp)
	s.calls++
	s.answeredBy = s.model.model()
	choice := resp.Choices[0]
	call := usage.Usage{ModelCalls: 1, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	if call.PromptTokens == 0 && call.CompletionTokens == 0 {
		// No provider figure: booked apart, as the estimate (usage.estimated).
		call.Estimated = usage.Counts{ModelCalls: 1, PromptTokens: size, CompletionTokens: messageTokens(choice.Message)}
	}
	s.usage = s.usage.Add(call)
	if s.calls == 1 {
		s.firstPrompt = call.PromptTokens + call.Estimated.PromptTokens
	}
	msg := assistantTurn(choice.Message, step)
	echoed := msg
	if !s.cfg.EchoReasoning {
		echoed.ReasoningContent = ""
	}
	// The bounds count the larger of the provider's figure and the estimate
	// when the provider truncated silently (modelClient.checkTruncation).
	s.conv.answered(echoed, sentLen, s.model.boundsPrompt) // the answer is in the model_response event
	s.cfg.Tracing.Content(span, tracing.AttrOutputMessages, []openai.ChatCompletionMessage{msg})
	s.emit(Event{Kind: EventModelResponse, Step: step, Message: &msg, FinishReason: string(choice.FinishReason),
		Usage: &call, ContextTokens: resp.Usage.PromptTokens, DurationMs: durationMs(time.Since(started)), Model: s.answeredBy})
	return echoed, choice.FinishReason, nil
}

// assistantTurn is the answer as it is echoed back on later requests: its
// text, its reasoning_content (providers such as DeepSeek want it back) and
// its tool calls, each with a unique id so every call can be answered.
func assistantTurn(m openai.ChatCompletionMessage, step int) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Content, ReasoningContent: m.ReasoningContent}
	seen := map[string]bool{}
	for i, c := range m.ToolCalls {
		id := c.ID
		if id == "" || seen[id] {
			id = fmt.Sprintf("call_%d_%d", step, i)
		}
		seen[id] = true
		out.ToolCalls = append(out.ToolCalls, openai.ToolCall{
			ID: id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments},
		})
	}
	if out.Content == "" && m.Refusal != "" {
		out.Content = m.Refusal
	}
	if out.Content == "" && len(out.ToolCalls) == 0 {
		out.Content = emptyAnswerText
	}
	return out
}

// cutOff answers an answer cut by the output-token limit: none of its tool
// calls is run (their arguments may be cut), each is answered as not run,
// and the model is told to retry shorter.
func (s *session) cutOff(step int, msg openai.ChatCompletionMessage) error {
	notice, err := render(textCutoff, struct{ MaxOutputTokens int }{s.cfg.MaxOutputTokens})
	if err != nil {
		return err
	}
	for _, c := range msg.ToolCalls {
		content := toolContent(failed("not run: the answer that made this call was cut off by the output-token limit"))
		s.conv.appendToolResult(c.ID, content)
		s.emit(Event{Kind: EventToolResult, Step: step, Tool: c.Function.Name, ToolCallID: c.ID, Output: content, Failed: true})
	}
	s.conv.appendUser(notice)
	return nil
}

// answeredWithText answers an answer without tool calls with the role's
// reminder, the last one (bounds.textAnswer) offering only the finishing
// tool; past the reminders the round ends.
func (s *session) answeredWithText() error {
	final, err := s.bounds.textAnswer()
	if err != nil {
		return err
	}
	texts := s.role.texts()
	var text string
	if final {
		text, err = render(texts.finalReminder, nil)
	} else {
		text, err = render(texts.reminder, struct{ ReportOnly bool }{s.bounds.reportOnly})
	}
	if err != nil {
		return err
	}
	s.conv.appendUser(text)
	return nil
}

func toolNames(defs []openai.Tool) []string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Function.Name
	}
	return names
}

// SafeURL is a URL as it may be recorded or logged: credentials (userinfo),
// the query (some gateways carry keys there) and the fragment removed.
func SafeURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
