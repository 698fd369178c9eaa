// Package agent runs one fresh coding-agent session: one round of a Ralph
// loop. A session starts with an empty conversation (the round prompt only),
// calls an OpenAI-compatible chat-completions endpoint, runs the workspace
// tools the model asks for, and ends when submit_report accepts a valid
// handoff report, or fails in a classified way. It has no Temporal imports:
// the activity adapts it.
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

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// errRoundDeadline is the cause of a session that reached Request.Deadline.
var errRoundDeadline = errors.New("round timeout reached")

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
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	if obs == nil {
		obs = ObserverFunc(func(Event) {})
	}
	ws, snap, err := openGuarded(cfg, req)
	if err != nil {
		return Result{}, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	defer ws.Close()

	s, err := newSession(cfg, req, ws, obs)
	if err != nil {
		return Result{}, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	s.snap = snap
	sctx := ctx
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadlineCause(ctx, req.Deadline, errRoundDeadline)
		defer cancel()
	}
	s.emit(Event{Kind: EventSessionStart, Round: req.Round, MaxRounds: req.MaxRounds, Model: cfg.Model, BaseURL: SafeURL(cfg.BaseURL)})
	rep, err := s.run(sctx)
	err = settle(ctx, sctx, err)
	// Whatever ended the session, no change to a protected path outlives it:
	// the checkpoint that follows (or the next session) never sees one.
	if _, rerr := s.restoreProtected(); rerr != nil && (err == nil || Outcome(err) == OutcomeChildFailure) {
		err = rerr
	}

	end := Event{Kind: EventSessionEnd, Outcome: Outcome(err), Model: s.reportModel()}
	total := s.usage
	end.Usage = &total
	if err == nil && s.review != nil {
		end.Review = s.review
	} else if err == nil {
		end.Report = &rep
	} else {
		end.Error = Redact(err.Error(), cfg.APIKey)
	}
	s.emit(end)
	res := Result{Report: rep, Usage: s.usage, Model: s.reportModel(), FirstPromptTokens: s.firstPrompt, Restored: s.restoredList(),
		ForcedBound: s.forced}
	if err == nil {
		res.Verification = s.verification
		res.Review = s.review
	}
	return res, err
}

// settle gives a failed session its final error kind: the caller's ctx
// first (a cancel is a cancel, whatever it interrupted), then the round
// deadline, which is an ordinary child failure.
func settle(ctx, sctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if sctx.Err() != nil && errors.Is(context.Cause(sctx), errRoundDeadline) {
		return childFailure("the round timeout was reached without a valid report")
	}
	return err
}

// Outcome names an error's kind for events and logs.
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeReport
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return OutcomeCancelled
	case IsChildFailure(err):
		return OutcomeChildFailure
	case IsModelUnavailable(err):
		return OutcomeModelUnavailable
	case isDeferred(err):
		return OutcomeDeferred
	default:
		return OutcomeHarnessError
	}
}

// session is the state of one conversation.
type session struct {
	cfg    Config
	req    Request
	obs    Observer
	model  *modelClient
	ws     *tools.Workspace
	limits tools.Limits

	tools     map[string]tools.Tool
	toolNames []string // every offered tool, for "unknown tool" answers
	allDefs   []openai.Tool
	reportDef openai.Tool // the tool that ends the session: submit_report, or submit_review
	finish    string      // its name
	// allDefs as JSON and the estimated size of each offer, built once per
	// worker (definitions.go); allDefsJSON is shared, never changed.
	allDefsJSON                    []byte
	allDefsTokens, reportDefTokens int

	messages []openai.ChatCompletionMessage
	sent     int  // messages already shown in an earlier model_request event
	defsSent bool // tool definitions already in the transcript

	// reportedPrompt is the prompt tokens the provider reported for the last
	// call, which sent the first reportedLen messages (0: none reported).
	reportedPrompt, reportedLen int
	callLog                     []string // "name arguments" of every tool call, for compaction

	started      time.Time
	handoffAt    time.Time // when the time bound is reached (zero: none)
	handoffBound string    // which time bound handoffAt is

	usage          usage.Usage
	firstPrompt    int    // prompt tokens the provider reported for the first call
	answeredBy     string // the model of the last completed call
	calls          int    // completed model calls
	repairs        int
	textStreak     int  // consecutive answers without a tool call
	reportOnly     bool // only submit_report is offered from now on
	forced         string
	pendingBound   string // a bound found while running tools, forced before the next call
	compacted      bool
	verifyFailures int
	verification   *report.Verification
	lastRejection  string
	repeat         repeatGuard

	snap     *tools.ProtectedSnapshot // protected paths as the session found them (nil: none)
	restored map[string]bool          // every protected path restored so far
	review   *report.Review           // a reviewer session's accepted verdict
}

func newSession(cfg Config, req Request, ws *tools.Workspace, obs Observer) (*session, error) {
	s := &session{cfg: cfg, req: req, obs: obs, ws: ws, limits: ws.Limits(), tools: map[string]tools.Tool{}, started: time.Now()}
	s.model = newModelClient(cfg, req.Deferrable, s.emit)
	for _, t := range ws.Tools() {
		s.tools[t.Name()] = t
		s.toolNames = append(s.toolNames, t.Name())
		s.allDefs = append(s.allDefs, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()},
		})
	}
	s.finish = SubmitReportTool
	if req.Review != nil {
		s.finish = SubmitReviewTool
	}
	def, err := finishingTool(s.finish, req.handoffCap())
	if err != nil {
		return nil, err
	}
	s.reportDef = def
	s.allDefs = append(s.allDefs, s.reportDef)
	s.toolNames = append(s.toolNames, s.finish)
	o, err := offerFor(s.allDefs)
	if err != nil {
		return nil, err
	}
	s.allDefsJSON, s.allDefsTokens, s.reportDefTokens = o.encoded, o.allTokens, o.finishTokens
	s.handoffAt, s.handoffBound = s.timeBound()
	return s, nil
}

// reportModel is the model that produced the report: the one that answered
// the last call, else the one in use.
func (s *session) reportModel() string {
	if s.answeredBy != "" {
		return s.answeredBy
	}
	return s.model.model()
}

func (s *session) emit(e Event) {
	e.Time = time.Now().UTC()
	e.SessionID = s.req.SessionID
	s.obs.Observe(e)
}

func (s *session) run(ctx context.Context) (report.Report, error) {
	msgs, err := s.initialMessages()
	if err != nil {
		return report.Report{}, err
	}
	s.messages = msgs
	for s.calls < s.cfg.MaxModelCalls {
		step := s.calls + 1
		offered, size, err := s.prepare(step)
		if err != nil {
			return report.Report{}, err
		}
		msg, finish, err := s.callModel(ctx, step, offered, size)
		var tooLong *contextLengthError
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
		s.textStreak = 0
		rep, done, err := s.runTools(ctx, step, msg.ToolCalls)
		if err != nil || done {
			return rep, err
		}
	}
	if s.lastRejection != "" {
		return report.Report{}, childFailure("no valid report within the bound of %d model calls (last rejection: %s)", s.cfg.MaxModelCalls, s.lastRejection)
	}
	return report.Report{}, childFailure("no valid report within the bound of %d model calls", s.cfg.MaxModelCalls)
}

// prepare decides what the next request offers: it forces the hand-off
// when a bound is reached, and compacts the conversation when even the
// hand-off request would not fit the context (or the run's token budget).
// No request above the context window is ever sent: when the compacted
// request does not fit either, the round ends as a child failure.
func (s *session) prepare(step int) ([]openai.Tool, int, error) {
	if s.forced == "" {
		if bound := s.dueBound(step); bound != "" {
			if err := s.forceHandoff(step, bound); err != nil {
				return nil, 0, err
			}
		}
	}
	offered := s.offered()
	size := s.nextRequestTokens(offered)
	overBudget := s.forced == BoundTokenBudget && size > s.budgetLeft()
	if !s.compacted && (size > s.cfg.ContextTokens || overBudget) {
		if err := s.compact(s.forced); err != nil {
			return nil, 0, err
		}
		offered = s.offered()
		size = s.nextRequestTokens(offered)
	}
	if size > s.cfg.ContextTokens {
		return nil, 0, childFailure("the compacted hand-off request would need about %d tokens, more than the model's context of %d", size, s.cfg.ContextTokens)
	}
	return offered, size, nil
}

func (s *session) offered() []openai.Tool {
	if s.reportOnly {
		return []openai.Tool{s.reportDef}
	}
	return s.allDefs
}

// contextRefused answers the provider's first context-length refusal with
// the compacted hand-off request; a second one (or one of the compacted
// request itself) ends the round.
func (s *session) contextRefused(step int, e *contextLengthError) error {
	if s.compacted { // compaction happens once: this refusal is the second
		return childFailure("%v (again, after the compacted hand-off request)", e)
	}
	if s.forced == "" {
		s.emit(Event{Kind: EventHandoff, Step: step, Bound: BoundContextError})
	}
	return s.compact(BoundContextError)
}

// callModel sends the whole conversation so far (only ever extended, except
// by the one compaction) and appends the model's answer to it.
func (s *session) callModel(ctx context.Context, step int, offered []openai.Tool, size int) (openai.ChatCompletionMessage, openai.FinishReason, error) {
	ev := Event{Kind: EventModelRequest, Step: step, Messages: slices.Clone(s.messages[s.sent:]), Tools: toolNames(offered),
		ContextTokens: size, Compacted: s.compacted && s.sent == 0}
	if !s.defsSent {
		ev.ToolDefinitions, s.defsSent = bytes.Clone(s.allDefsJSON), true // the event's own copy
	}
	s.emit(ev)
	s.sent = len(s.messages)

	started := time.Now()
	sentLen := len(s.messages)
	ctx, span := s.cfg.Tracing.StartChat(ctx, s.cfg.Model)
	defer span.End()
	s.cfg.Tracing.Content(span, tracing.AttrInputMessages, s.messages)
	resp, err := s.model.complete(ctx, step, openai.ChatCompletionRequest{
		Messages: slices.Clip(s.messages),
		Tools:    offered,
		// max_tokens, not max_completion_tokens: vLLM, Ollama, DeepSeek and
		// llama.cpp all read max_tokens, several ignore or refuse the newer
		// name, and OpenAI still accepts it for its non-reasoning models.
		// Zero is left out of the request (no limit).
		MaxTokens: s.cfg.MaxOutputTokens, //lint:ignore SA1019 the field every OpenAI-compatible server reads

	})
	if err != nil {
		s.traceModelError(span, err)
		return openai.ChatCompletionMessage{}, "", err
	}
	traceResponse(span, resp)
	s.calls++
	s.answeredBy = s.model.model()
	call := usage.Usage{ModelCalls: 1, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	s.usage = s.usage.Add(call)
	if s.calls == 1 {
		s.firstPrompt = resp.Usage.PromptTokens
	}
	if resp.Usage.PromptTokens > 0 {
		s.reportedPrompt, s.reportedLen = resp.Usage.PromptTokens, sentLen
	} else {
		s.reportedPrompt, s.reportedLen = 0, 0
	}
	choice := resp.Choices[0]
	msg := assistantTurn(choice.Message, step)
	echoed := msg
	if !s.cfg.EchoReasoning {
		echoed.ReasoningContent = ""
	}
	s.messages = append(s.messages, echoed)
	s.cfg.Tracing.Content(span, tracing.AttrOutputMessages, []openai.ChatCompletionMessage{msg})
	s.sent = len(s.messages) // the answer is in the model_response event
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
		s.messages = append(s.messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID, Content: content})
		s.emit(Event{Kind: EventToolResult, Step: step, Tool: c.Function.Name, ToolCallID: c.ID, Output: content, Failed: true})
	}
	s.appendUser(notice)
	return nil
}

// answeredWithText handles an answer without tool calls. Only consecutive
// text answers count: a reminder while they are within MaxReminders (the
// last one offers only submit_report), a child failure past them.
func (s *session) answeredWithText() error {
	s.textStreak++
	if s.textStreak > s.cfg.MaxReminders {
		return childFailure("the model answered with text %d times in a row, the last time when only submit_report was offered", s.textStreak)
	}
	reminder, final := textReminder, textFinalReminder
	if s.req.Review != nil {
		reminder, final = textReviewReminder, textReviewFinalReminder
	}
	if s.textStreak == s.cfg.MaxReminders {
		text, err := render(final, nil)
		if err != nil {
			return err
		}
		s.reportOnly = true
		s.appendUser(text)
		return nil
	}
	text, err := render(reminder, struct{ ReportOnly bool }{s.reportOnly})
	if err != nil {
		return err
	}
	s.appendUser(text)
	return nil
}

func (s *session) appendUser(text string) {
	s.messages = append(s.messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
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
