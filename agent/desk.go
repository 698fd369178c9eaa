package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/agent/wire"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Desk is the round's side of a session whose agent runs elsewhere (a
// coding-agent CLI, docs/agents.md): the same role, workspace guards,
// bounds, report checks, verification and protected-path restores as the
// builtin session, without its model loop. The agent's calls of the
// finishing tool and its model calls (seen by a gateway) are handed to it;
// it is safe for concurrent use.
type Desk struct {
	mu     sync.Mutex
	s      *session
	prompt string
	done   bool
	report report.Report
	ended  error // a submission that ended the round (repairs spent)

	// What the gateway forwarded (SPEC 33): requests count when forwarded,
	// the tokens of those in flight are reserved against the budget, and
	// past a forced hand-off only one request per refused submission goes.
	forwarded int
	reserved  int
	refusals  int // submissions refused since the hand-off (each owes a repair)
	afterCap  int // requests forwarded after the hand-off request
}

// OpenDesk opens the round of req: the workspace with the role's guards,
// its protected-path snapshot and the round prompt; session_start is
// emitted. Close must follow.
func OpenDesk(cfg Config, req Request, obs Observer) (*Desk, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	if obs == nil {
		obs = ObserverFunc(func(Event) {})
	}
	r := roleFor(req)
	ws, snap, err := r.workspace(cfg, req)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	s, err := newSession(cfg, req, r, ws, obs)
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	s.snap = snap
	msgs, err := s.initialMessages()
	if err != nil {
		ws.Close()
		return nil, err
	}
	d := &Desk{s: s, prompt: msgs[0].Content + "\n\n" + msgs[1].Content}
	s.emit(Event{Kind: EventSessionStart, Round: req.Round, MaxRounds: req.MaxRounds, Model: cfg.Model, BaseURL: SafeURL(cfg.BaseURL)})
	return d, nil
}

// Prompt is the round prompt the agent reads first: the role's system
// prompt and its first user message.
func (d *Desk) Prompt() string { return d.prompt }

// Workspace is the round's workspace (its sandbox runs the agent).
func (d *Desk) Workspace() *tools.Workspace { return d.s.ws }

// Finishing is the name of the tool that ends the round, and its
// definition: description and JSON schema of its arguments.
func (d *Desk) Finishing() (name, description string, schema json.RawMessage) {
	f := d.s.tools.finishing.Function
	raw, _ := f.Parameters.(json.RawMessage)
	return f.Name, f.Description, raw
}

// Submit checks one call of the finishing tool with arguments args: the
// answer for the agent, whether it failed, and whether the round is over
// (a valid report accepted, or the repairs spent).
func (d *Desk) Submit(ctx context.Context, args string) (answer string, failedCall, over bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	if d.done || d.ended != nil {
		return "The round is over.", false, true
	}
	s.usage.ToolCalls++
	step := s.calls
	name := s.role.finishing()
	s.emit(Event{Kind: EventToolCall, Step: step, Tool: name, Arguments: args})
	started := time.Now()
	res, rep, err := s.role.submit(ctx, s, step, args)
	content := toolContent(res)
	if err != nil && res.Output == "" {
		content = toolContent(failed("the report could not be checked: %s", Redact(err.Error(), s.cfg.APIKey)))
	}
	s.emit(Event{Kind: EventToolResult, Step: step, Tool: name, Output: content, Failed: res.Failed || err != nil,
		DurationMs: durationMs(time.Since(started))})
	switch {
	case err != nil:
		d.ended = err
		return content, true, true
	case rep != nil:
		d.done, d.report = true, *rep
		return content, false, true
	}
	if res.Failed {
		d.refusals++
	}
	return content, res.Failed, false
}

// Accepted reports whether a valid report (or verdict) ended the round.
func (d *Desk) Accepted() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.done
}

// ModelCall counts one completed model call that spent u, answered by model.
func (d *Desk) ModelCall(u usage.Usage, model string, ev Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	s.calls++
	s.answeredBy = model
	u.ModelCalls = 1
	s.usage = s.usage.Add(u)
	if s.calls == 1 {
		s.firstPrompt = u.PromptTokens
	}
	ev.Kind, ev.Step, ev.Usage, ev.Model = EventModelResponse, s.calls, &u, model
	s.emit(ev)
}

// Emit records an event of the round (the agent's own output, a gateway
// request), stamped with the session.
func (d *Desk) Emit(ev Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ev.Step == 0 {
		ev.Step = d.s.calls + 1
	}
	d.s.emit(ev)
}

// Forwarding is the gateway's leave for one request: Refused names the
// bound that keeps it from the provider (""; it may go); Notice is the
// hand-off notice to send with it ("": none); MaxOutput is what the token
// budget's remainder pays for its answer (0: no budget); Reserved is what
// the request holds of the budget until Release.
type Forwarding struct {
	Refused, Notice string
	MaxOutput       int
	Reserved        int
}

// Forward counts one request of an agent outside the process before the
// gateway forwards it, the request of about nextTokens tokens. A bound
// that applies to such an agent (the model call cap, the round or run
// time, the run's token budget, counting what requests in flight may
// spend) forces the hand-off: the notice is returned for it and every
// later request. Past the hand-off request, one more goes per submission
// refused since (a repair, at most Config.MaxRepairs); any other is
// refused. A forwarded request's reservation must be released (Release)
// once its answer is counted or it failed.
func (d *Desk) Forward(nextTokens int) (Forwarding, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	step := d.forwarded + 1
	spent := s.usage.PromptTokens + s.usage.CompletionTokens + d.reserved
	if s.bounds.forced == "" {
		bound := s.bounds.handoffDue(step, time.Now(), spent, func() int { return nextTokens })
		if bound != "" && bound != BoundContext { // the agent manages its own context
			var err error
			if s.handoffText, err = s.handoffNotice(bound); err != nil {
				return Forwarding{}, err
			}
			s.bounds.force(bound)
			s.emit(Event{Kind: EventHandoff, Step: step, Bound: bound})
			d.afterCap, d.refusals = -1, 0 // this request is the hand-off
		}
	}
	f := Forwarding{Notice: s.handoffText}
	if s.bounds.forced != "" {
		if d.afterCap >= min(d.refusals, s.cfg.MaxRepairs) {
			f.Refused = fmt.Sprintf("the round's %s bound is reached and its hand-off request was forwarded; "+
				"only a repair of a refused %s goes to the model (at most %d)", s.bounds.forced, s.role.finishing(), s.cfg.MaxRepairs)
			return f, nil
		}
		d.afterCap++
	}
	if b := s.bounds; b.tokenBudget > 0 {
		f.MaxOutput = max(b.budgetLeft(spent)-nextTokens, 1)
		if b.forced != "" {
			f.MaxOutput = max(f.MaxOutput, b.answerReserve) // room for the report
		}
	}
	d.forwarded++
	// The room the hand-off check assumes for an answer, not the whole
	// MaxOutput: a CLI's side request sent beside the round's (opencode's
	// title) must not find the budget spent by the other's limit.
	f.Reserved = nextTokens + s.bounds.answerReserve
	d.reserved += f.Reserved
	return f, nil
}

// Release frees what a forwarded request reserved of the token budget.
func (d *Desk) Release(f Forwarding) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reserved -= f.Reserved
}

// Forged records a submission that was not the model's act (SPEC 33):
// it never counts; why is what the agent is answered.
func (d *Desk) Forged(args, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.s.emit(Event{Kind: EventForgedSubmission, Step: d.s.calls, Tool: d.s.role.finishing(), Arguments: args, Output: why, Failed: true})
}

// Usage is what the round spent so far.
func (d *Desk) Usage() usage.Usage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.s.usage
}

// Close ends the round: err is why the agent stopped without a report
// (nil when one was accepted); a submission that ended the round wins. Like
// RunSession it restores every protected path, emits session_end and
// returns the Result and the error of the round's kind (ctx is the caller's,
// for a cancel).
func (d *Desk) Close(ctx context.Context, err error) (Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	defer s.ws.Close()
	switch {
	case d.ended != nil:
		err = d.ended
	case d.done:
		err = nil
	case err == nil:
		err = childFailure("the agent ended without a valid report")
	}
	if ctx.Err() != nil && !d.done {
		err = ctx.Err()
	}
	if _, rerr := s.restoreProtected(); rerr != nil && (err == nil || Outcome(err) == OutcomeChildFailure) {
		err = rerr
	}
	return s.end(d.report, err), err
}

// ProviderDelay is how long a provider's answer with status and headers h
// asks to wait (Retry-After, retry-after-ms, on a 429 the rate-limit reset
// headers), as the builtin session reads it.
func ProviderDelay(status int, h http.Header, now time.Time) (time.Duration, bool) {
	return wire.ProviderDelay(status, h, now)
}

// ChildFailureOf is an ordinary end of a round without a valid report, for
// an agent outside the process.
func ChildFailureOf(reason string) error { return childFailure("%s", reason) }

// AgentTool is the Tool of the events about the agent process itself (the
// connections it asked the sandbox's proxy for).
const AgentTool = "agent"

// Network records the connections the agent's process (and all it
// started) asked the sandbox's proxy for.
func (d *Desk) Network(recs []netproxy.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.s.emitNetwork(d.s.calls, AgentTool, "", recs)
}
