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
// coding-agent CLI, docs/agents.md): the round core (round.go) the builtin
// session stands on too, with the same role, workspace guards, bounds,
// report checks, verification and protected-path restores, and no model
// loop nor model client. The agent's calls of the
// finishing tool and its model calls (seen by a gateway) are handed to it;
// it is safe for concurrent use.
type Desk struct {
	mu     sync.Mutex
	r      *round
	prompt string
	done   bool
	report report.Report
	ended  error // a submission that ended the round (repairs spent)

	handoffText string // the forced hand-off's notice, sent with every later request

	// What the gateway forwarded (docs/security.md): requests count when forwarded,
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
	r, msgs, err := openRound(cfg, req, obs)
	if err != nil {
		return nil, err
	}
	return &Desk{r: r, prompt: msgs[0].Content + "\n\n" + msgs[1].Content}, nil
}

// Prompt is the round prompt the agent reads first: the role's system
// prompt and its first user message.
func (d *Desk) Prompt() string { return d.prompt }

// Workspace is the round's workspace (its sandbox runs the agent).
func (d *Desk) Workspace() *tools.Workspace { return d.r.ws }

// Finishing is the name of the tool that ends the round, and its
// definition: description and JSON schema of its arguments.
func (d *Desk) Finishing() (name, description string, schema json.RawMessage) {
	f := d.r.tools.finishing.Function
	raw, _ := f.Parameters.(json.RawMessage)
	return f.Name, f.Description, raw
}

// Submit checks one call of the finishing tool with arguments args: the
// answer for the agent, whether it failed, and whether the round is over
// (a valid report accepted, or the repairs spent).
func (d *Desk) Submit(ctx context.Context, args string) (answer string, failedCall, over bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.r
	if d.done || d.ended != nil {
		return "The round is over.", false, true
	}
	r.usage.ToolCalls++
	step := r.calls
	name := r.role.finishing()
	r.emit(Event{Kind: EventToolCall, Step: step, Tool: name, Arguments: args})
	started := time.Now()
	res, rep, err := r.role.submit(ctx, r, step, args)
	content := toolContent(res)
	if err != nil && res.Output == "" {
		content = toolContent(failed("the report could not be checked: %s", Redact(err.Error(), r.cfg.APIKey)))
	}
	r.emit(Event{Kind: EventToolResult, Step: step, Tool: name, Output: content, Failed: res.Failed || err != nil,
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
	r := d.r
	r.calls++
	r.answeredBy = model
	u.ModelCalls = 1
	r.usage = r.usage.Add(u)
	if r.calls == 1 {
		r.firstPrompt = u.PromptTokens + u.Estimated.PromptTokens
	}
	ev.Kind, ev.Step, ev.Usage, ev.Model = EventModelResponse, r.calls, &u, model
	r.emit(ev)
}

// Emit records an event of the round (the agent's own output, a gateway
// request), stamped with the session.
func (d *Desk) Emit(ev Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ev.Step == 0 {
		ev.Step = d.r.calls + 1
	}
	d.r.emit(ev)
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
	r := d.r
	step := d.forwarded + 1
	spent := r.usage.Tokens() + d.reserved
	if r.bounds.forced == "" {
		bound := r.bounds.handoffDue(step, time.Now(), spent, func() int { return nextTokens })
		if bound != "" && bound != BoundContext { // the agent manages its own context
			var err error
			// The agent keeps its conversation: the notice counts the
			// finishing tool's definition only.
			if d.handoffText, err = r.handoffNotice(bound, r.tools.offerTokens(r.tools.offered(true))); err != nil {
				return Forwarding{}, err
			}
			r.bounds.force(bound)
			r.emit(Event{Kind: EventHandoff, Step: step, Bound: bound})
			d.afterCap, d.refusals = -1, 0 // this request is the hand-off
		}
	}
	f := Forwarding{Notice: d.handoffText}
	if r.bounds.forced != "" {
		if d.afterCap >= min(d.refusals, r.cfg.MaxRepairs) {
			f.Refused = fmt.Sprintf("the round's %s bound is reached and its hand-off request was forwarded; "+
				"only a repair of a refused %s goes to the model (at most %d)", r.bounds.forced, r.role.finishing(), r.cfg.MaxRepairs)
			return f, nil
		}
		d.afterCap++
	}
	if b := r.bounds; b.tokenBudget > 0 {
		f.MaxOutput = max(b.budgetLeft(spent)-nextTokens, 1)
		if b.forced != "" {
			f.MaxOutput = max(f.MaxOutput, b.answerReserve) // room for the report
		}
	}
	d.forwarded++
	// The room the hand-off check assumes for an answer, not the whole
	// MaxOutput: a CLI's side request sent beside the round's (opencode's
	// title) must not find the budget spent by the other's limit.
	f.Reserved = nextTokens + r.bounds.answerReserve
	d.reserved += f.Reserved
	return f, nil
}

// Release frees what a forwarded request reserved of the token budget.
func (d *Desk) Release(f Forwarding) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reserved -= f.Reserved
}

// Forged records a submission that was not the model's act (docs/security.md):
// it never counts; why is what the agent is answered.
func (d *Desk) Forged(args, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.r.emit(Event{Kind: EventForgedSubmission, Step: d.r.calls, Tool: d.r.role.finishing(), Arguments: args, Output: why, Failed: true})
}

// Usage is what the round spent so far.
func (d *Desk) Usage() usage.Usage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.usage
}

// Close ends the round: err is why the agent stopped without a report
// (nil when one was accepted); a submission that ended the round wins. Like
// RunSession it restores every protected path, emits session_end and
// returns the Result and the error of the round's kind (ctx is the caller's,
// for a cancel).
func (d *Desk) Close(ctx context.Context, err error) (Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.r
	defer r.ws.Close()
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
	// An agent outside the process has no model client: the model in use
	// is the configured one.
	return r.finish(d.report, err, r.cfg.Model)
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
	d.r.emitNetwork(d.r.calls, AgentTool, "", recs)
}
