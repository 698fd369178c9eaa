package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Metric of the independent reviewer: ralph_reviews_total{verdict}.
const (
	MetricReviews = "ralph_reviews"
	LabelVerdict  = "verdict"
)

// ReviewCompletion runs one independent reviewer session on an accepted
// completion (docs/guards.md#independent-reviewer): a fresh session with its own id and
// transcript (review-<R>-attempt-<A>-<session id>.jsonl), read-only tools,
// the workspace read-only to its commands, and in git modes the run's
// change cut to ReviewDiffChars. It holds the workspace lock, heartbeats and
// maps failures exactly as RunRound does.
func (a *Activities) ReviewCompletion(ctx context.Context, in ReviewInput) (out ReviewOutput, err error) {
	if err := checkReviewInput(in); err != nil {
		return ReviewOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRoundInput, nil)
	}
	info := activity.GetInfo(ctx)
	logger := activity.GetLogger(ctx)
	sessionID, err := newSessionID()
	if err != nil {
		return ReviewOutput{}, err
	}
	ctx, span := a.cfg.Agent.Tracing.Start(ctx, tracing.SpanReview, tracing.AttrRound.Int(in.Round),
		tracing.AttrAttempt.Int(int(info.Attempt)), tracing.AttrWorkspace.String(in.Workspace), tracing.AttrSessionID.String(sessionID))
	defer func() { endSpan(span, err, a.cfg.Agent.APIKey, tracing.AttrReviewVerdict.String(out.Review.Verdict)) }()
	spentBefore := earlierAttemptsUsage(ctx)
	hb := startHeartbeat(ctx, HeartbeatDetails{Round: in.Round, Attempt: int(info.Attempt), SessionID: sessionID, Usage: spentBefore}, a.cfg.HeartbeatInterval, a.cfg.RecordHeartbeat)
	defer hb.stop()

	dir, err := a.prepareWorkspace(in.Workspace)
	if err != nil {
		return ReviewOutput{}, err
	}
	lock, err := a.lockWorkspace(ctx, in.Workspace, func() {
		logger.Info("Waiting for the workspace lock held by another round", "workspace", in.Workspace)
	})
	if err != nil {
		if ctx.Err() != nil {
			return ReviewOutput{}, ctx.Err()
		}
		return ReviewOutput{}, err
	}
	defer lock.release()

	transcript, closeTranscript, path, err := a.openTranscript(ctx, in.Workspace, fmt.Sprintf("review-%d-attempt-%d-%s.jsonl", in.Round, info.Attempt, sessionID))
	if err != nil {
		return ReviewOutput{}, err
	}
	defer closeTranscript()
	subject := &agent.ReviewSubject{Report: in.Report, Verification: in.Verification, Base: in.BaseCommit, Commit: in.Commit}
	for _, c := range in.Candidates {
		subject.Candidates = append(subject.Candidates, agent.ReviewCandidate{Number: c.Number, Agent: c.Agent, Model: c.Model, Report: c.Report, DiffStat: c.DiffStat})
	}
	if a.git != nil && in.Commit != "" && len(in.Candidates) == 0 {
		round := gitws.Round{WorkflowID: info.WorkflowExecution.ID, Workspace: in.Workspace, Round: in.Round, MaxRounds: in.MaxRounds, Attempt: 1}
		if subject.Diff, err = a.reviewChange(ctx, dir, round, in); err != nil {
			w := &workspaceRound{round: round}
			return ReviewOutput{}, w.stepError(ctx, err, FailureDetails{SessionID: sessionID, Usage: spentBefore})
		}
	}
	cfg := a.cfg.Agent
	if a.cfg.ReviewModel != "" {
		cfg.Model = a.cfg.ReviewModel
	}
	logger.Info("Review started", "round", in.Round, "attempt", info.Attempt, "sessionId", sessionID,
		"model", cfg.Model, "workspace", in.Workspace, "transcript", path)
	tally := newRoundTally()
	res, err := a.provider(a.cfg.Agents.ReviewAgent(), cfg, a.cfg.Agents).Run(ctx, agent.Request{
		SessionID: sessionID, Objective: in.Objective, Round: in.Round, MaxRounds: in.MaxRounds,
		Workspace: dir, MaxHandoffChars: in.MaxHandoffChars, Deadline: roundDeadline(info),
		TokenBudget: in.TokenBudget, RunDeadline: in.RunDeadline, Review: subject, Deferrable: in.Deferrable,
	}, agent.Observers(transcript, hb, tally))
	verdict := agent.Outcome(err)
	if err == nil {
		verdict = res.Review.Verdict
	}
	tally.recordReview(activity.GetMetricsHandler(ctx), verdict, res.Usage)
	if terr := transcript.Err(); terr != nil {
		logger.Warn("Transcript incomplete", "transcript", path, "error", terr)
	}
	logger.Info("Review ended", "round", in.Round, "sessionId", sessionID, "verdict", verdict,
		"modelCalls", res.Usage.ModelCalls, "toolCalls", res.Usage.ToolCalls)
	spent := spentBefore.Add(res.Usage)
	if d, ok := agent.AsDeferred(err); ok && ctx.Err() == nil {
		// Not a failure: the workflow waits durably and runs the review again.
		logger.Info("Review deferred", "round", in.Round, "sessionId", sessionID, "reason", d.Reason,
			"retryAfterSeconds", d.RetryAfterSeconds(), "model", d.Model, "error", agent.Redact(d.Last, a.cfg.Agent.APIKey))
		return ReviewOutput{Usage: spent, SessionID: sessionID,
			Deferred: &Deferred{Reason: d.Reason, RetryAfterSeconds: d.RetryAfterSeconds()}}, nil
	}
	if err != nil {
		return ReviewOutput{}, a.roundError(ctx, fmt.Errorf("review: %w", err), in.Round, FailureDetails{SessionID: sessionID, Usage: spent})
	}
	return ReviewOutput{Review: *res.Review, Usage: spent, SessionID: sessionID}, nil
}

// recordReview adds one reviewer session to h: its usage like a round's,
// and one review under its verdict (approve, revise, or how a session that
// gave none ended: a bounded set).
func (t *roundTally) recordReview(h client.MetricsHandler, verdict string, u usage.Usage) {
	t.recordUsage(h, u)
	h.WithTags(map[string]string{LabelVerdict: verdict}).Counter(MetricReviews).Inc(1)
}

// reviewChange readies the workspace for the reviewer (remote mode: this
// worker's clone at the branch head) and returns the run's change.
func (a *Activities) reviewChange(ctx context.Context, dir string, round gitws.Round, in ReviewInput) (string, error) {
	if err := a.git.PrepareReview(ctx, dir, round); err != nil {
		return "", fmt.Errorf("prepare the workspace for the review: %w", err)
	}
	base := in.BaseCommit
	if base == "" {
		base = in.Commit
	}
	change, err := a.git.Change(ctx, dir, base, in.Commit, a.cfg.ReviewDiffChars)
	if err != nil {
		return "", fmt.Errorf("the run's change for the review: %w", err)
	}
	return change, nil
}

func checkReviewInput(in ReviewInput) error {
	if err := CheckWorkspace(in.Workspace); err != nil {
		return fmt.Errorf("bad review input: workspace %w", err)
	}
	switch {
	case in.Objective == "":
		return fmt.Errorf("bad review input: objective is empty")
	case in.Round < 1 || in.MaxRounds < in.Round:
		return fmt.Errorf("bad review input: round %d of %d is out of range", in.Round, in.MaxRounds)
	case in.MaxHandoffChars <= 0:
		return fmt.Errorf("bad review input: maxHandoffChars must be positive, got %d", in.MaxHandoffChars)
	case len(in.Candidates) == 1:
		return fmt.Errorf("bad review input: a choice needs at least two candidates, got one")
	case len(in.Candidates) == 0 && in.Report.Status != report.StatusComplete:
		return fmt.Errorf("bad review input: only a complete report is reviewed, got %q", in.Report.Status)
	}
	return nil
}
