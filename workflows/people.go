package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"
)

// People in the loop (docs/operators.md): an operator's guidance for the next
// round, and approval waits on a verified complete or every N-th round.

// UpdateGuide sends an operator's guidance ({"text"}) to the next round;
// SignalGuide means the same from a Campaign (a workflow cannot send updates).
const (
	UpdateGuide = "guide"
	SignalGuide = "guide"
)

// MaxGuidanceChars bounds the guidance pending for one round (and a
// rejection's reason, which becomes guidance), in code points.
const MaxGuidanceChars = 4000

// PhaseAwaitingApproval: the run waits durably for an approve or reject update.
const PhaseAwaitingApproval = "awaiting-approval"

// Approval modes (input approve, RALPH_APPROVE): none, complete, or
// rounds:N (complete and after every N-th round).
const (
	ApproveComplete     = "complete"
	approveRoundsPrefix = "rounds:"
)

// versionApproval guards the approval wait's commands (its marker, timer and
// search attribute upsert): runs recorded before approvals never wait.
const versionApproval = "approval-waits"

// GuideRequest is the guide update's argument.
type GuideRequest struct {
	Text string `json:"text"`
}

// ApproveRequest is a Ralph run's approve update argument: {}.
type ApproveRequest struct{}

// ReasonRequest is a Ralph run's reject update argument: why, for the next round.
type ReasonRequest struct {
	Reason string `json:"reason"`
}

// GuidanceStatus shows the operator's guidance: the text waiting for the
// next round, and the last round whose prompt carried guidance.
type GuidanceStatus struct {
	Pending        string `json:"pending,omitempty"`
	DeliveredRound int    `json:"deliveredRound,omitempty"`
}

// people is the loop's state of guidance and approvals.
type people struct {
	pending string // waits for the next round
	// delivering is what the running round's input carries: a deferred
	// round runs again with it, as the same round.
	delivering     string
	deliveredRound int
	awaiting       *approvalWait
}

type approvalWait struct {
	decided bool
	reason  string // a reject's: the next round's guidance
}

// ParseApprove checks an approval mode and returns N of rounds:N (0 for
// none and complete).
func ParseApprove(mode string) (int, error) {
	switch mode {
	case "", ApproveNone, ApproveComplete:
		return 0, nil
	}
	if n, ok := strings.CutPrefix(mode, approveRoundsPrefix); ok {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("must be none, complete or rounds:N with N a positive integer, got %q", mode)
}

func (p *people) status() *GuidanceStatus {
	if p.pending == "" && p.deliveredRound == 0 {
		return nil
	}
	return &GuidanceStatus{Pending: p.pending, DeliveredRound: p.deliveredRound}
}

// add queues text after what is pending (a round reads all of it, once).
func (p *people) add(text string) {
	text = strings.TrimSpace(text)
	if p.pending != "" {
		text = p.pending + "\n\n" + text
	}
	p.pending = text
}

// fits refuses empty text and text that would make the pending guidance
// longer than MaxGuidanceChars; what names the field.
func (p *people) fits(what, text string) error {
	text = strings.TrimSpace(text)
	n := utf8.RuneCountInString(text)
	switch pending := utf8.RuneCountInString(p.pending); {
	case n == 0:
		return fmt.Errorf("%s is empty", what)
	case n > MaxGuidanceChars:
		return fmt.Errorf("%s is %d characters, over the limit of %d", what, n, MaxGuidanceChars)
	case pending > 0 && pending+2+n > MaxGuidanceChars:
		return fmt.Errorf("%s would make the pending guidance %d characters (%d already pending), over the limit of %d",
			what, pending+2+n, pending, MaxGuidanceChars)
	}
	return nil
}

// take is the guidance round's input carries: what a deferred run of the
// same round already carried, or else everything pending.
func (p *people) take(round int) string {
	if p.delivering == "" && p.pending != "" {
		p.delivering, p.pending, p.deliveredRound = p.pending, "", round
	}
	return p.delivering
}

// carried is the guidance a continue-as-new hands on: what a deferred
// round's input carried (it runs again in the next run) before what waits.
func (p *people) carried() string {
	switch {
	case p.delivering == "":
		return p.pending
	case p.pending == "":
		return p.delivering
	}
	return p.delivering + "\n\n" + p.pending
}

func (l *loop) validateGuide(req GuideRequest) error {
	if l.status.Phase == PhaseFinished {
		return errors.New("the run has already finished")
	}
	return l.people.fits("text", req.Text)
}

func (l *loop) onGuide(_ workflow.Context, req GuideRequest) (Ack, error) {
	l.people.add(req.Text)
	return l.ack(), nil
}

func (l *loop) validateApprove(ApproveRequest) error { return l.awaitingApproval() }

func (l *loop) onApprove(_ workflow.Context, _ ApproveRequest) (Ack, error) {
	l.people.awaiting.decided = true
	return l.ack(), nil
}

func (l *loop) validateReject(req ReasonRequest) error {
	if err := l.awaitingApproval(); err != nil {
		return err
	}
	return l.people.fits("reason", req.Reason)
}

func (l *loop) onReject(_ workflow.Context, req ReasonRequest) (Ack, error) {
	l.people.awaiting.decided = true
	l.people.awaiting.reason = strings.TrimSpace(req.Reason)
	return l.ack(), nil
}

func (l *loop) awaitingApproval() error {
	switch {
	case l.status.Phase == PhaseFinished:
		return errors.New("the run has already finished")
	case l.people.awaiting == nil:
		return fmt.Errorf("the run is not awaiting approval (phase %s)", l.status.Phase)
	case l.people.awaiting.decided:
		return errors.New("the run's approval wait is already decided")
	}
	return nil
}

// receiveGuidance takes a Campaign's guide signals like guide updates; an
// invalid one is dropped (the campaign's validator already named why).
func (l *loop) receiveGuidance(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalGuide)
	workflow.Go(ctx, func(ctx workflow.Context) {
		var req GuideRequest
		for ch.Receive(ctx, &req) {
			if l.validateGuide(req) == nil {
				_, _ = l.onGuide(ctx, req)
			}
		}
	})
}

// approvalAfter says whether round's end waits for approval: a verified
// (and reviewed) complete under complete or rounds:N, every N-th round
// under rounds:N.
func (l *loop) approvalAfter(round int, complete bool) bool {
	n, err := ParseApprove(l.approve)
	switch {
	case err != nil || l.approve == "" || l.approve == ApproveNone:
		return false
	case complete:
		return true
	}
	return n > 0 && round%n == 0
}

// awaitApproval holds the run after round until an approve (nil, nil), a
// reject (rejected: its reason is the next round's guidance), a stop, a
// cancel, or RALPH_APPROVAL_TIMEOUT_HOURS (stopped). A durable wait: no
// activity, so no worker slot and no model request.
func (l *loop) awaitApproval(ctx workflow.Context, round int) (rejected bool, res *Result, err error) {
	if workflow.GetVersion(ctx, versionApproval, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false, nil, nil
	}
	w := &approvalWait{}
	l.people.awaiting = w
	defer func() { l.people.awaiting = nil }()
	l.status.Phase = PhaseAwaitingApproval
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("Awaiting approval after round %d of %d", round, l.maxRounds))
	l.upsertVisibility(ctx)
	l.notify(ctx, EventAwaitingApproval, round, 0, false)
	decided := func() bool { return w.decided || l.control.stopRequested }
	if hours := l.limits.ApprovalTimeoutHours; hours > 0 {
		var ok bool
		ok, err = workflow.AwaitWithTimeout(ctx, time.Duration(hours)*time.Hour, decided)
		if err == nil && !ok {
			l.control.stopRequested = true
			l.control.stopReason = fmt.Sprintf("no approval within %d hours", hours)
		}
	} else {
		err = workflow.Await(ctx, decided)
	}
	switch {
	case err != nil:
		return false, nil, l.cancelled(ctx, round, err)
	case l.control.stopRequested:
		return false, l.finishStopped(ctx, round), nil
	}
	l.status.Phase = PhaseRunning
	if w.reason != "" {
		l.people.add(w.reason)
		return true, nil, nil
	}
	return false, nil, nil
}
