// Package agent runs one fresh coding-agent session: one round of a Ralph
// loop. A session starts with an empty conversation (the round prompt only),
// calls an OpenAI-compatible chat-completions endpoint, runs the workspace
// tools the model asks for, and ends when submit_report accepts a valid
// handoff report, or fails in a classified way. It has no Temporal imports:
// the activity adapts it.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/tools"
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
	ws, err := tools.OpenWorkspace(req.Workspace, cfg.ToolLimits, tools.WithSandbox(cfg.Sandbox))
	if err != nil {
		return Result{}, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	defer ws.Close()

	s := newSession(cfg, req, ws.Tools(), obs)
	sctx := ctx
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadlineCause(ctx, req.Deadline, errRoundDeadline)
		defer cancel()
	}
	s.emit(Event{Kind: EventSessionStart, Round: req.Round, MaxRounds: req.MaxRounds, Model: cfg.Model, BaseURL: safeURL(cfg.BaseURL)})
	rep, err := s.run(sctx)
	err = settle(ctx, sctx, err)

	end := Event{Kind: EventSessionEnd, Outcome: Outcome(err)}
	total := s.usage
	end.Usage = &total
	if err == nil {
		end.Report = &rep
	} else {
		end.Error = Redact(err.Error(), cfg.APIKey)
	}
	s.emit(end)
	return Result{Report: rep, Usage: s.usage}, err
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
	default:
		return OutcomeHarnessError
	}
}

// session is the state of one conversation.
type session struct {
	cfg   Config
	req   Request
	obs   Observer
	model *modelClient

	tools     map[string]tools.Tool
	toolNames []string // every offered tool, for "unknown tool" answers
	allDefs   []openai.Tool
	reportDef openai.Tool

	messages []openai.ChatCompletionMessage
	sent     int  // messages already shown in an earlier model_request event
	defsSent bool // tool definitions already in the transcript

	usage         usage.Usage
	repairs       int
	reminders     int
	reportOnly    bool // only submit_report is offered from now on
	lastRejection string
	repeat        repeatGuard
}

func newSession(cfg Config, req Request, list []tools.Tool, obs Observer) *session {
	s := &session{cfg: cfg, req: req, obs: obs, tools: map[string]tools.Tool{}}
	s.model = newModelClient(cfg, s.emit)
	for _, t := range list {
		s.tools[t.Name()] = t
		s.toolNames = append(s.toolNames, t.Name())
		s.allDefs = append(s.allDefs, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()},
		})
	}
	s.reportDef = submitReportDefinition(req.handoffCap())
	s.allDefs = append(s.allDefs, s.reportDef)
	s.toolNames = append(s.toolNames, SubmitReportTool)
	return s
}

func (s *session) emit(e Event) {
	e.Time = time.Now().UTC()
	e.SessionID = s.req.SessionID
	s.obs.Observe(e)
}

func (s *session) run(ctx context.Context) (report.Report, error) {
	msgs, err := initialMessages(s.req)
	if err != nil {
		return report.Report{}, err
	}
	s.messages = msgs
	for step := 1; step <= s.cfg.MaxModelCalls; step++ {
		if step == s.cfg.MaxModelCalls && !s.reportOnly {
			s.restrictToReport(lastCallNotice)
		}
		msg, err := s.callModel(ctx, step)
		if err != nil {
			return report.Report{}, err
		}
		if len(msg.ToolCalls) == 0 {
			if err := s.answeredWithText(); err != nil {
				return report.Report{}, err
			}
			continue
		}
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

// callModel sends the whole conversation so far (only ever extended, never
// rewritten) and appends the model's answer to it.
func (s *session) callModel(ctx context.Context, step int) (openai.ChatCompletionMessage, error) {
	offered := s.allDefs
	if s.reportOnly {
		offered = []openai.Tool{s.reportDef}
	}
	ev := Event{Kind: EventModelRequest, Step: step, Messages: slices.Clone(s.messages[s.sent:]), Tools: toolNames(offered)}
	if !s.defsSent {
		ev.ToolDefinitions, s.defsSent = s.allDefs, true
	}
	s.emit(ev)
	s.sent = len(s.messages)

	started := time.Now()
	resp, err := s.model.complete(ctx, step, openai.ChatCompletionRequest{
		Model:    s.cfg.Model,
		Messages: slices.Clip(s.messages),
		Tools:    offered,
	})
	if err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	call := usage.Usage{ModelCalls: 1, PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	s.usage = s.usage.Add(call)
	msg := assistantTurn(resp.Choices[0].Message, step)
	s.messages = append(s.messages, msg)
	s.sent = len(s.messages) // the answer is in the model_response event
	s.emit(Event{Kind: EventModelResponse, Step: step, Message: &msg, FinishReason: string(resp.Choices[0].FinishReason),
		Usage: &call, DurationMs: durationMs(time.Since(started))})
	return msg, nil
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

// answeredWithText handles an answer without tool calls: a reminder while
// reminders last (the last one restricts the offer to submit_report), and a
// child failure once only submit_report was offered.
func (s *session) answeredWithText() error {
	if s.reportOnly {
		return childFailure("the model answered with text instead of calling submit_report when only submit_report was offered (after %d reminder(s))", s.reminders)
	}
	if s.reminders < s.cfg.MaxReminders {
		s.reminders++
		if s.reminders < s.cfg.MaxReminders {
			s.appendUser(reminderNotice)
			return nil
		}
	}
	s.restrictToReport(finalReminderNotice)
	return nil
}

func (s *session) restrictToReport(notice string) {
	s.reportOnly = true
	s.appendUser(notice)
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

// safeURL drops credentials and the query from a URL before it is recorded.
func safeURL(raw string) string {
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
