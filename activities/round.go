package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/internal/readable"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/usage"
)

// The session's own round deadline ends a little before Temporal's
// start-to-close timeout, so that running out of round time ends in the
// session's forced hand-off (or, without a report even then, an ordinary
// child failure) rather than a timeout Temporal would retry:
// maxDeadlineMargin, or a tenth of the round for short rounds.
const maxDeadlineMargin = 10 * time.Second

// transcriptFilePerm: transcripts hold code and prompts; only the worker reads them.
const transcriptFilePerm = 0o600

// FailureDetails ride on ChildFailed and ModelUnavailable errors: which
// session failed and what it had spent.
type FailureDetails struct {
	SessionID string      `json:"sessionId"`
	Usage     usage.Usage `json:"usage"`
}

// RunRound runs one round as one fresh agent session on <WorkspaceRoot>/<in.Workspace>.
//
// It holds an exclusive lock on the workspace (kept under SessionDir) for the
// whole round, heartbeats HeartbeatDetails throughout, writes a transcript
// outside the workspace, and maps failures:
//   - bad input (a workspace escaping the root, a round out of range):
//     non-retryable BadRoundInput;
//   - an ordinary failure of the session: non-retryable ChildFailed;
//   - provider limits (in.Deferrable): no error, RoundOutput.Deferred;
//   - transient model errors that outlasted the in-session retries:
//     retryable ModelUnavailable (the next attempt is a fresh session);
//   - a cancel (or a worker shutting down): the context's error, so Temporal
//     records a cancellation;
//   - anything else (disk, harness): a retryable error.
func (a *Activities) RunRound(ctx context.Context, in RoundInput) (out RoundOutput, err error) {
	if err := checkRoundInput(in); err != nil {
		return RoundOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRoundInput, nil)
	}
	info := activity.GetInfo(ctx)
	logger := activity.GetLogger(ctx)
	sessionID, err := newSessionID()
	if err != nil {
		return RoundOutput{}, err
	}
	ctx, span := a.cfg.Agent.Tracing.Start(ctx, tracing.SpanRound, tracing.AttrRound.Int(in.Round),
		tracing.AttrAttempt.Int(int(info.Attempt)), tracing.AttrWorkspace.String(in.Workspace), tracing.AttrSessionID.String(sessionID))
	defer func() { endRoundSpan(span, out, err, a.cfg.Agent.APIKey) }()
	spentBefore := earlierAttemptsUsage(ctx)
	hb := startHeartbeat(ctx, HeartbeatDetails{Round: in.Round, Attempt: int(info.Attempt), SessionID: sessionID, Usage: spentBefore}, a.cfg.HeartbeatInterval, a.cfg.RecordHeartbeat)
	defer hb.stop()

	before := FailureDetails{SessionID: sessionID, Usage: spentBefore}
	dir, err := a.prepareWorkspace(in.Workspace)
	if err != nil {
		return RoundOutput{}, setupError(ctx, err, before)
	}
	lock, err := a.lockWorkspace(ctx, in.Workspace, func() {
		logger.Info("Waiting for the workspace lock held by another round", "workspace", in.Workspace)
	})
	if err != nil {
		return RoundOutput{}, setupError(ctx, err, before)
	}
	defer func() { lock.release() }()

	transcript, closeTranscript, path, err := a.openTranscript(ctx, in.Workspace, transcriptName(in, int(info.Attempt), sessionID))
	if err != nil {
		return RoundOutput{}, setupError(ctx, err, before)
	}
	defer closeTranscript()
	ws, err := a.beginWorkspace(ctx, dir, in, before)
	if err != nil {
		return RoundOutput{}, setupError(ctx, err, before)
	}
	var cand *candidateTree
	if in.Candidate != nil {
		if cand, err = a.beginCandidate(ctx, ws, *in.Candidate, before); err != nil {
			return RoundOutput{}, setupError(ctx, err, before)
		}
		defer cand.remove(ctx)
		// The candidate works its own tree: the workspace is free for the
		// other candidates to start from.
		lock.release()
		if lock, err = a.lockWorkspace(ctx, cand.name, func() {}); err != nil {
			return RoundOutput{}, setupError(ctx, err, before)
		}
		dir = cand.dir
	}
	logger.Info("Round started", "round", in.Round, "maxRounds", in.MaxRounds, "attempt", info.Attempt,
		"sessionId", sessionID, "workspace", in.Workspace, "transcript", path)

	kind, provider := a.roundProvider(in)
	var spec CandidateSpec // zero for a plain round
	if in.Candidate != nil {
		spec = *in.Candidate
	}
	tally, started := newRoundTally(), time.Now()
	res, err := provider.Run(ctx, agent.Request{
		SessionID: sessionID, Objective: in.Objective, Round: in.Round, MaxRounds: in.MaxRounds,
		Previous: in.Previous, Workspace: dir, MaxHandoffChars: in.MaxHandoffChars,
		Deadline: roundDeadline(info), VerifyCommand: in.VerifyCommand, TokenBudget: in.TokenBudget, RunDeadline: in.RunDeadline,
		ProtectedPaths: in.ProtectedPaths,
		Deferrable:     in.Deferrable,
		Guidance:       in.Guidance,
		Candidate:      spec.Number, Candidates: spec.Of,
	}, agent.Observers(transcript, hb, tally, providerWarnings(logger, in.Round)))
	tally.record(activity.GetMetricsHandler(ctx), roundOutcome(res, err), res.Usage, time.Since(started))
	if terr := transcript.Err(); terr != nil {
		logger.Warn("Transcript incomplete", "transcript", path, "error", terr)
	}
	logger.Info("Round ended", "round", in.Round, "sessionId", sessionID, "outcome", agent.Outcome(err),
		"modelCalls", res.Usage.ModelCalls, "toolCalls", res.Usage.ToolCalls)
	spent := spentBefore.Add(res.Usage)
	if d, ok := agent.AsDeferred(err); ok && ctx.Err() == nil {
		// Not a failure: the workflow waits durably and runs the round again
		// as a fresh session. What the session wrote stays in the workspace
		// (no checkpoint: there is no report to commit it under).
		logger.Info("Round deferred", "round", in.Round, "sessionId", sessionID, "reason", d.Reason,
			"retryAfterSeconds", d.RetryAfterSeconds(), "model", d.Model, "error", agent.Redact(d.Last, a.cfg.Agent.APIKey))
		return RoundOutput{Usage: spent, SessionID: sessionID, Model: res.Model, FirstRequestTokens: res.FirstPromptTokens,
			Deferred: &Deferred{Reason: d.Reason, RetryAfterSeconds: d.RetryAfterSeconds()}}, nil
	}
	if err != nil {
		return RoundOutput{}, a.roundError(ctx, err, in.Round, FailureDetails{SessionID: sessionID, Usage: spent})
	}
	out = RoundOutput{Report: res.Report, Usage: spent, SessionID: sessionID, Verification: res.Verification, Model: res.Model,
		FirstRequestTokens: res.FirstPromptTokens, Restored: res.Restored, BudgetForced: budgetForced(res.ForcedBound)}
	details := FailureDetails{SessionID: sessionID, Usage: spent}
	if cand != nil {
		if out.Checkpoint, out.WorkspaceChanged, out.Candidate, err = cand.finish(ctx, res.Report, details); err != nil {
			return RoundOutput{}, err
		}
		out.Candidate.Agent = kind
		a.scoreCandidate(ctx, cand, in, res.Report, out.Candidate)
	} else if out.Checkpoint, out.WorkspaceChanged, err = ws.finish(ctx, res.Report, details); err != nil {
		return RoundOutput{}, err
	}
	if len(out.Restored) > 0 {
		logger.Info("Restored protected paths the session changed", "round", in.Round, "paths", out.Restored)
	}
	return out, nil
}

// provider is the agent of kind that runs a session with cfg: the builtin
// one or a CLI (RALPH_AGENT, RALPH_REVIEW_AGENT, RALPH_CANDIDATE_AGENTS;
// docs/agents.md).
func (a *Activities) provider(kind string, cfg agent.Config, settings cli.Settings) agent.Provider {
	p, err := settings.Provider(kind, cfg)
	if err != nil {
		return unavailable{err}
	}
	return p
}

// roundProvider is the provider of a round's session and its kind: the
// worker's RALPH_AGENT and RALPH_MODEL unless the round is a candidate
// that names its own.
func (a *Activities) roundProvider(in RoundInput) (string, agent.Provider) {
	kind, cfg, settings := a.cfg.Agents.Agent, a.cfg.Agent, a.cfg.Agents
	if c := in.Candidate; c != nil {
		if c.Agent != "" {
			kind = c.Agent
		}
		if c.Model != "" {
			cfg.Model, settings.Model = c.Model, c.Model
		}
	}
	return kind, a.provider(kind, cfg, settings)
}

// transcriptName is an attempt's transcript file:
// round-<R>[-candidate-<k>]-attempt-<A>-<session id>.jsonl.
func transcriptName(in RoundInput, attempt int, sessionID string) string {
	if in.Candidate != nil {
		return fmt.Sprintf("round-%d-candidate-%d-attempt-%d-%s.jsonl", in.Round, in.Candidate.Number, attempt, sessionID)
	}
	return fmt.Sprintf("round-%d-attempt-%d-%s.jsonl", in.Round, attempt, sessionID)
}

// unavailable is a provider whose CLI cannot be found any more (it was at
// start): the round fails as a harness error and is retried.
type unavailable struct{ err error }

func (u unavailable) Run(context.Context, agent.Request, agent.Observer) (agent.Result, error) {
	return agent.Result{}, u.err
}

// endRoundSpan records how the round ended on its span: the report's status,
// or the error (redacted) as the span's status.
func endRoundSpan(span trace.Span, out RoundOutput, err error, apiKey string) {
	endSpan(span, err, apiKey, tracing.AttrReportStatus.String(string(out.Report.Status)))
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

func checkRoundInput(in RoundInput) error {
	if err := CheckWorkspace(in.Workspace); err != nil {
		return fmt.Errorf("bad round input: workspace %w", err)
	}
	switch {
	case strings.TrimSpace(in.Objective) == "":
		return fmt.Errorf("bad round input: objective is empty")
	case in.Round < 1 || in.MaxRounds < in.Round:
		return fmt.Errorf("bad round input: round %d of %d is out of range", in.Round, in.MaxRounds)
	case in.MaxHandoffChars <= 0:
		return fmt.Errorf("bad round input: maxHandoffChars must be positive, got %d", in.MaxHandoffChars)
	}
	return nil
}

// prepareWorkspace creates <root>/<workspace> through an os.Root, so that a
// symlink planted under the root cannot lead the workspace outside it.
func (a *Activities) prepareWorkspace(workspace string) (string, error) {
	root, err := os.OpenRoot(a.cfg.WorkspaceRoot)
	if err != nil {
		return "", fmt.Errorf("open the workspace root: %w", err)
	}
	defer root.Close()
	if err := root.MkdirAll(workspace, workspaceDirPerm); err != nil {
		if strings.Contains(err.Error(), "escapes from parent") {
			// os.Root's escape error is unexported; its text is stable.
			return "", temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("bad round input: workspace %q leads outside the workspace root through a symlink", workspace),
				ErrTypeBadRoundInput, nil)
		}
		return "", fmt.Errorf("create the workspace %q: %w", workspace, err)
	}
	return filepath.Join(a.cfg.WorkspaceRoot, workspace), nil
}

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

// roundDeadline is the session's own deadline: Temporal's deadline for this
// attempt minus a margin (none when Temporal set none).
func roundDeadline(info activity.Info) time.Time {
	if info.Deadline.IsZero() {
		return time.Time{}
	}
	total := info.Deadline.Sub(info.StartedTime)
	return info.Deadline.Add(-min(maxDeadlineMargin, total/10))
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

// isUnreadable reports whether err is a workspace walk that met a directory
// the worker could neither read nor make readable: the round cannot be
// checked, and a retry would meet the same directory.
func isUnreadable(err error) bool {
	var re *readable.Error
	return errors.As(err, &re)
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

// providerWarnings logs what the session found wrong with the provider's
// setup (a silently truncated prompt), so an operator sees it without
// reading transcripts.
func providerWarnings(logger log.Logger, round int) agent.Observer {
	return agent.ObserverFunc(func(e agent.Event) {
		if e.Kind == agent.EventModelWarning {
			logger.Warn("Model provider warning", "round", round, "step", e.Step, "model", e.Model, "warning", e.Error)
		}
	})
}
