package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// round is what every kind of agent stands on in one round: the request,
// its role and workspace, the bounds that can end it, the finishing tool
// and its checks (report validation, verify, protected paths), what it has
// spent, and its end. The builtin model loop (session) adds the
// conversation and the model client; a Desk adds what its gateway
// forwards. It builds no model client: an agent outside the process has
// its own.
type round struct {
	cfg     Config
	req     Request
	obs     Observer
	ws      *tools.Workspace
	limits  tools.Limits
	role    role
	bounds  roundBounds
	tools   toolbox
	started time.Time

	usage       usage.Usage
	firstPrompt int    // prompt tokens of the first call (reported, else estimated)
	answeredBy  string // the model of the last completed call
	calls       int    // completed model calls

	// What the finishing tool's checks found.
	repairs        int
	verifyFailures int
	verification   *report.Verification
	lastRejection  string
	review         *report.Review // a reviewer's accepted verdict
	plan           *plan.Plan     // a planner's accepted plan

	snap     *tools.ProtectedSnapshot // protected paths as the round found them (nil: none)
	restored map[string]bool          // every protected path restored so far
}

// openRound opens the round of req for either kind of agent: it checks cfg
// and req, opens the workspace with the role's guards and takes its
// protected-path snapshot, renders the round's first messages (the role's
// system prompt and its first user message) and emits session_start. The
// caller closes r.ws.
func openRound(cfg Config, req Request, obs Observer) (*round, []openai.ChatCompletionMessage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if err := req.validate(); err != nil {
		return nil, nil, err
	}
	if obs == nil {
		obs = ObserverFunc(func(Event) {})
	}
	role := roleFor(req)
	ws, snap, err := role.workspace(cfg, req)
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	r := &round{cfg: cfg, req: req, obs: obs, ws: ws, limits: ws.Limits(), role: role, snap: snap, started: time.Now()}
	if r.tools, err = newToolbox(ws, role.finishing(), req.Review.choosing(), req.handoffCap()); err != nil {
		ws.Close()
		return nil, nil, fmt.Errorf("session %s: %w", req.SessionID, err)
	}
	r.bounds = newRoundBounds(cfg, req, r.started)
	msgs, err := r.initialMessages()
	if err != nil {
		ws.Close()
		return nil, nil, err
	}
	r.emit(Event{Kind: EventSessionStart, Round: req.Round, MaxRounds: req.MaxRounds, Model: cfg.Model, BaseURL: SafeURL(cfg.BaseURL)})
	return r, msgs, nil
}

func (r *round) emit(e Event) {
	e.Time = time.Now().UTC()
	e.SessionID = r.req.SessionID
	r.obs.Observe(e)
}

// emitNetwork writes each connection a command asked the proxy for.
func (r *round) emitNetwork(step int, tool, callID string, recs []netproxy.Record) {
	for i := range recs {
		r.emit(Event{Kind: EventNetwork, Step: step, Tool: tool, ToolCallID: callID, Network: &recs[i]})
	}
}

// rejected answers an invalid report or review: the exact rule broken,
// one repair spent, a child failure past the bound.
func (r *round) rejected(what string, err error) (tools.Result, error) {
	r.repairs++
	r.lastRejection = err.Error()
	if r.repairs > r.cfg.MaxRepairs {
		return failed("%s rejected: %v. No repairs are left; the session ends here.", what, err),
			childFailure("the %s was still invalid after %d repair(s): %v", what, r.cfg.MaxRepairs, err)
	}
	left := r.cfg.MaxRepairs - r.repairs + 1
	return failed("%s rejected: %v. Fix exactly this and call %s again (%d attempt(s) left). "+
		"It is never cut or repaired for you.", what, err, r.role.finishing(), left), nil
}

// finish ends the round with rep or err. Whatever ended it, no change to a
// protected path outlives it: the checkpoint that follows (or the next
// session) never sees one. inUse is the model in use, recorded when no
// call answered.
func (r *round) finish(rep report.Report, err error, inUse string) (Result, error) {
	if _, rerr := r.restoreProtected(); rerr != nil && (err == nil || Outcome(err) == OutcomeChildFailure) {
		err = rerr
	}
	return r.end(rep, err, inUse), err
}

// end records the session_end event and returns the round's Result.
func (r *round) end(rep report.Report, err error, inUse string) Result {
	model := r.reportModel(inUse)
	end := Event{Kind: EventSessionEnd, Outcome: Outcome(err), Model: model}
	total := r.usage
	end.Usage = &total
	switch {
	case err == nil && r.review != nil:
		end.Review = r.review
	case err == nil && r.plan != nil:
		end.Plan = r.plan
	case err == nil:
		end.Report = &rep
	default:
		end.Error = Redact(err.Error(), r.cfg.APIKey)
	}
	r.emit(end)
	res := Result{Report: rep, Usage: r.usage, Model: model, FirstPromptTokens: r.firstPrompt, Restored: r.restoredList(),
		ForcedBound: r.bounds.forced}
	if err == nil {
		res.Verification = r.verification
		res.Review = r.review
		res.Plan = r.plan
	}
	return res
}

// reportModel is the model that produced the report: the one that answered
// the last call, else inUse.
func (r *round) reportModel(inUse string) string {
	if r.answeredBy != "" {
		return r.answeredBy
	}
	return inUse
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
