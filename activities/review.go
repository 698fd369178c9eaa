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
	ctx, at, err := a.openAttempt(ctx, opening{span: tracing.SpanReview, round: in.Round, workspace: in.Workspace,
		transcript: fmt.Sprintf("review-%d", in.Round)})
	if err != nil {
		return ReviewOutput{}, err
	}
	defer func() { at.close(err, tracing.AttrReviewVerdict.String(out.Review.Verdict)) }()
	subject, err := a.reviewSubject(ctx, at, in)
	if err != nil {
		return ReviewOutput{}, at.setupFailed(ctx, err)
	}
	res, err := a.runReviewSession(ctx, at, in, subject)
	spent, deferred, err := a.sessionOutcome(ctx, at, "Review", in.Round, res, err)
	switch {
	case deferred != nil:
		return ReviewOutput{Usage: spent, SessionID: at.sessionID, Deferred: deferred}, nil
	case err != nil:
		return ReviewOutput{}, err
	}
	return ReviewOutput{Review: *res.Review, Usage: spent, SessionID: at.sessionID}, nil
}

// reviewSubject is what the reviewer is shown: the report, the
// verification, the candidates of a choice, and in git modes the run's
// change (the workspace readied for it first).
func (a *Activities) reviewSubject(ctx context.Context, at *attempt, in ReviewInput) (*agent.ReviewSubject, error) {
	subject := &agent.ReviewSubject{Report: in.Report, Verification: in.Verification, Base: in.BaseCommit, Commit: in.Commit}
	for _, c := range in.Candidates {
		subject.Candidates = append(subject.Candidates, agent.ReviewCandidate{Number: c.Number, Agent: c.Agent, Model: c.Model, Report: c.Report, DiffStat: c.DiffStat})
	}
	if a.git == nil || in.Commit == "" || len(in.Candidates) > 0 {
		return subject, nil
	}
	round := gitws.Round{WorkflowID: activity.GetInfo(ctx).WorkflowExecution.ID, Workspace: in.Workspace, Round: in.Round, MaxRounds: in.MaxRounds, Attempt: 1}
	var err error
	if subject.Diff, err = a.reviewChange(ctx, at.dir, round, in); err != nil {
		w := &workspaceRound{round: round}
		return nil, w.stepError(ctx, err, at.before())
	}
	return subject, nil
}

// runReviewSession runs the reviewer's session (RALPH_REVIEW_AGENT, with
// RALPH_REVIEW_MODEL when set) and records its metrics; its error names
// the review.
func (a *Activities) runReviewSession(ctx context.Context, at *attempt, in ReviewInput, subject *agent.ReviewSubject) (agent.Result, error) {
	cfg := a.cfg.Agent
	if a.cfg.ReviewModel != "" {
		cfg.Model = a.cfg.ReviewModel
	}
	info := activity.GetInfo(ctx)
	at.logger.Info("Review started", "round", in.Round, "attempt", info.Attempt, "sessionId", at.sessionID,
		"model", cfg.Model, "workspace", in.Workspace, "transcript", at.transcriptPath)
	tally := newRoundTally()
	res, err := a.provider(a.cfg.Agents.ReviewAgent(), cfg, a.cfg.Agents).Run(ctx, agent.Request{
		SessionID: at.sessionID, Objective: in.Objective, Round: in.Round, MaxRounds: in.MaxRounds,
		Workspace: at.dir, MaxHandoffChars: in.MaxHandoffChars, Deadline: roundDeadline(info),
		TokenBudget: in.TokenBudget, RunDeadline: in.RunDeadline, Review: subject, Deferrable: in.Deferrable,
	}, agent.Observers(at.transcript, at.hb, tally))
	verdict := agent.Outcome(err)
	if err == nil {
		verdict = res.Review.Verdict
	}
	tally.recordReview(activity.GetMetricsHandler(ctx), verdict, res.Usage)
	at.logger.Info("Review ended", "round", in.Round, "sessionId", at.sessionID, "verdict", verdict,
		"modelCalls", res.Usage.ModelCalls, "toolCalls", res.Usage.ToolCalls)
	if err != nil {
		return res, fmt.Errorf("review: %w", err)
	}
	return res, nil
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
