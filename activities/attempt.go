package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/usage"
)

// attempt is what an activity that runs a session (RunRound,
// ReviewCompletion) holds around it: a fresh session id, the tracing span,
// what the lost earlier attempts spent, the heartbeat, the workspace
// directory under its lock, and the transcript. Both activities open it
// through openAttempt, so a retry, a busy workspace or a failed setup
// behaves the same in both.
type attempt struct {
	sessionID   string
	number      int
	spentBefore usage.Usage
	span        trace.Span
	hb          *heartbeat
	dir         string
	lock        *workspaceLock
	transcript  *agent.Transcript
	// transcriptPath is logged so an operator can find the file.
	transcriptPath  string
	closeTranscript func()
	logger          log.Logger
	apiKey          string
	// candidate is what a candidate attempt's failures carry.
	candidate *CandidateFailure
}

// opening says which attempt to open: its span, round and workspace, and
// its transcript's name up to "-attempt-<A>-<session id>.jsonl".
type opening struct {
	span       string
	round      int
	workspace  string
	transcript string
}

// openAttempt opens an attempt of o. It fails only with an error mapped by
// setupError, having closed whatever it had opened; otherwise the caller
// closes the attempt.
func (a *Activities) openAttempt(ctx context.Context, o opening) (context.Context, *attempt, error) {
	info := activity.GetInfo(ctx)
	at := &attempt{number: int(info.Attempt), spentBefore: earlierAttemptsUsage(ctx), lock: &workspaceLock{},
		logger: activity.GetLogger(ctx), apiKey: a.cfg.Agent.APIKey}
	var err error
	if at.sessionID, err = newSessionID(); err != nil {
		return ctx, nil, setupError(ctx, err, at.before())
	}
	ctx, at.span = a.cfg.Agent.Tracing.Start(ctx, o.span, tracing.AttrRound.Int(o.round),
		tracing.AttrAttempt.Int(at.number), tracing.AttrWorkspace.String(o.workspace), tracing.AttrSessionID.String(at.sessionID))
	at.hb = startHeartbeat(ctx, HeartbeatDetails{Round: o.round, Attempt: at.number, SessionID: at.sessionID, Usage: at.spentBefore},
		a.cfg.HeartbeatInterval, a.cfg.RecordHeartbeat)
	if err := a.openWorkspace(ctx, at, o); err != nil {
		err = setupError(ctx, err, at.before())
		at.close(err)
		return ctx, nil, err
	}
	return ctx, at, nil
}

// openWorkspace readies the attempt's workspace directory, waits for its
// lock (heartbeating meanwhile) and creates its transcript.
func (a *Activities) openWorkspace(ctx context.Context, at *attempt, o opening) error {
	var err error
	if at.dir, err = a.prepareWorkspace(o.workspace); err != nil {
		return err
	}
	lock, err := a.lockWorkspace(ctx, o.workspace, func() {
		at.logger.Info("Waiting for the workspace lock held by another round", "workspace", o.workspace)
	})
	if err != nil {
		return err
	}
	at.lock = lock
	name := fmt.Sprintf("%s-attempt-%d-%s.jsonl", o.transcript, at.number, at.sessionID)
	at.transcript, at.closeTranscript, at.transcriptPath, err = a.openTranscript(ctx, o.workspace, name)
	return err
}

// openTranscript creates the attempt's transcript file under the worker's
// session directory, outside every workspace so it never lands in a
// checkpoint; the returned function closes it.
func (a *Activities) openTranscript(ctx context.Context, workspace, name string) (*agent.Transcript, func(), string, error) {
	dir := a.TranscriptDir(workspace)
	if err := os.MkdirAll(dir, sessionDirPerm); err != nil {
		return nil, nil, "", fmt.Errorf("create the transcript directory: %w", err)
	}
	path := filepath.Join(dir, name)
	f := createTranscriptFile(path)
	closeFile := func() {
		if err := f.close(); err != nil {
			activity.GetLogger(ctx).Error("The session's transcript is missing or incomplete", "transcript", path, "error", err)
		}
	}
	transcript := agent.NewTranscript(f, a.cfg.Agent.APIKey)
	transcript.SetLimit(int64(a.cfg.TranscriptMaxMB) << 20)
	return transcript, closeFile, path, nil
}

// relock trades the attempt's lock for the one on name (relative to the
// workspace root). On failure the attempt holds no lock.
func (a *Activities) relock(ctx context.Context, at *attempt, name string) error {
	at.lock.release()
	lock, err := a.lockWorkspace(ctx, name, func() {})
	if err != nil {
		return err
	}
	at.lock = lock
	return nil
}

// before is what a failure before the session carries: the earlier
// attempts' usage, so a last attempt failing there does not drop it.
func (at *attempt) before() FailureDetails {
	return FailureDetails{SessionID: at.sessionID, Usage: at.spentBefore, Candidate: at.candidate}
}

// setupFailed maps a failure after the opening but before the session.
func (at *attempt) setupFailed(ctx context.Context, err error) error {
	return setupError(ctx, err, at.before())
}

// sessionOutcome maps how the session ended, after the transcript is checked:
// what the attempts spent in all, and either a deferral (not a failure:
// the workflow waits durably and runs a fresh session) or the session's
// failure mapped by roundError. what ("Round", "Review") names it in logs.
func (a *Activities) sessionOutcome(ctx context.Context, at *attempt, what string, round int, res agent.Result, err error) (usage.Usage, *Deferred, error) {
	if terr := at.transcript.Err(); terr != nil {
		at.logger.Warn("Transcript incomplete", "transcript", at.transcriptPath, "error", terr)
	}
	spent := at.spentBefore.Add(res.Usage)
	if d, ok := agent.AsDeferred(err); ok && ctx.Err() == nil {
		at.logger.Info(what+" deferred", "round", round, "sessionId", at.sessionID, "reason", d.Reason,
			"retryAfterSeconds", d.RetryAfterSeconds(), "model", d.Model, "error", agent.Redact(d.Last, a.cfg.Agent.APIKey))
		return spent, &Deferred{Reason: d.Reason, RetryAfterSeconds: d.RetryAfterSeconds()}, nil
	}
	if err != nil {
		return spent, nil, a.roundError(ctx, err, round, FailureDetails{SessionID: at.sessionID, Usage: spent, Candidate: at.candidate})
	}
	return spent, nil, nil
}

// close releases what openAttempt opened, last opened first, and ends the
// span with err (or, on success, attrs).
func (at *attempt) close(err error, attrs ...attribute.KeyValue) {
	if at.closeTranscript != nil {
		at.closeTranscript()
	}
	at.lock.release()
	at.hb.stop()
	endSpan(at.span, err, at.apiKey, attrs...)
}

// endSpan ends an activity's span: on success with attrs, on failure with
// the error's type and its text (the API key redacted) as the status.
func endSpan(span trace.Span, err error, apiKey string, attrs ...attribute.KeyValue) {
	defer span.End()
	if err != nil {
		errType := "error"
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) {
			errType = appErr.Type()
		}
		tracing.Fail(span, errType, agent.Redact(err.Error(), apiKey))
		return
	}
	span.SetAttributes(attrs...)
}

// setupError maps a failure before the session started: a cancel stays a
// cancel, typed errors pass, anything else is a retryable RoundError that
// carries what earlier attempts spent (so a last attempt that fails here
// does not drop their usage from the run).
func setupError(ctx context.Context, err error, details FailureDetails) error {
	if ctx.Err() != nil {
		return cancelError(ctx, details)
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	return temporal.NewApplicationError(err.Error(), ErrTypeRoundError, details)
}

// roundError maps a failed session to what the workflow's retry policy
// expects. The API key never appears in a message.
func (a *Activities) roundError(ctx context.Context, err error, round int, details FailureDetails) error {
	if ctx.Err() != nil {
		return cancelError(ctx, details)
	}
	msg := agent.Redact(fmt.Sprintf("round %d: %v", round, err), a.cfg.Agent.APIKey)
	switch {
	case agent.IsChildFailure(err), isUnreadable(err):
		return temporal.NewNonRetryableApplicationError(msg, ErrTypeChildFailed, nil, details)
	case agent.IsModelUnavailable(err):
		return temporal.NewApplicationError(msg, ErrTypeModelUnavailable, details)
	default:
		return temporal.NewApplicationError(msg, ErrTypeRoundError, details)
	}
}

// cancelError is what an attempt whose context ended returns: when the
// server asked for the cancel (the run was cancelled), a CanceledError
// carrying what the attempts spent, so the run's usage counts the cancelled
// round; otherwise (a worker shutting down, a pause, a reset) the context's
// own error, as the SDK expects.
func cancelError(ctx context.Context, details FailureDetails) error {
	if errors.Is(ctx.Err(), context.Canceled) && temporal.IsCanceledError(context.Cause(ctx)) {
		return temporal.NewCanceledError(details)
	}
	return ctx.Err()
}

// earlierAttemptsUsage is what the lost attempts of this round spent, as
// their last heartbeat recorded it (nothing at attempt 1).
func earlierAttemptsUsage(ctx context.Context) usage.Usage {
	if !activity.HasHeartbeatDetails(ctx) {
		return usage.Usage{}
	}
	var prev HeartbeatDetails
	if err := activity.GetHeartbeatDetails(ctx, &prev); err != nil {
		return usage.Usage{}
	}
	return prev.Usage
}
