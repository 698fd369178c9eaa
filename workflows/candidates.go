package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Outcomes of a candidate besides its report's status.
const (
	CandidateRunning   = "running"
	CandidateFailed    = "failed"
	CandidateInvalid   = "invalid"
	CandidateCancelled = "cancelled"
	CandidateDeferred  = "deferred"
)

// adoptTimeout bounds one attempt of AdoptCandidate (a reset and, in
// remote mode, a push).
const adoptTimeout = 5 * time.Minute

// candidate is one of a round's candidates as the workflow sees it.
type candidate struct {
	spec     activities.CandidateSpec
	out      activities.RoundOutput
	err      error
	outcome  string
	problem  string
	spent    usage.Usage
	finished int // the order it finished in, from 1
	// provider and model are who runs it as far as the workflow knows
	// (resolvedSpec) until its output or failure says.
	provider, model string
	// failure is what a failed or cancelled attempt's details said: who
	// ran it and the ref keeping its work (nil when they said nothing).
	failure *activities.CandidateFailure
}

// valid reports whether the candidate handed off a report the workflow
// accepts: only those can be chosen.
func (c *candidate) valid() bool {
	switch c.outcome {
	case report.StatusComplete, report.StatusContinue, report.StatusBlocked:
		return true
	}
	return false
}

// runCandidates runs round as K fresh agents at once, each a RunRound of
// its own on its own clone of the workspace, chooses one (chooseCandidate),
// makes its tree the workspace and returns its output with the usage of
// all of them. A verified complete cancels the rest. The round fails only
// when every candidate does; when none handed off and one was deferred,
// the round is deferred.
func (l *loop) runCandidates(ctx workflow.Context, round int, label string, in activities.RoundInput) (activities.RoundOutput, error) {
	cctx, cancelRest := workflow.WithCancel(ctx)
	defer cancelRest()
	cands := make([]*candidate, l.candidates)
	sel := workflow.NewSelector(ctx)
	finished := 0
	var last *candidate // the one the selector just delivered
	for i := range cands {
		c := &candidate{spec: l.candidateSpec(i+1, len(cands)), outcome: CandidateRunning}
		c.provider, c.model = l.resolvedSpec(c.spec)
		cands[i] = c
		cin := in
		cin.Candidate = &c.spec
		if in.TokenBudget > 0 {
			// Every candidate is charged to the run: together they may
			// spend what is left, not each of them.
			cin.TokenBudget = max(in.TokenBudget/len(cands), 1)
		}
		opts := l.roundOptions(fmt.Sprintf("%s, candidate %d of %d", label, i+1, len(cands)))
		opts.ActivityID = fmt.Sprintf("round-%d-candidate-%d", round, i+1)
		if l.deferrals > 0 {
			opts.ActivityID += fmt.Sprintf("-go-%d", l.deferrals+1)
		}
		f := workflow.ExecuteActivity(workflow.WithActivityOptions(cctx, opts), activities.RunRoundName, cin)
		sel.AddFuture(f, func(f workflow.Future) {
			finished++
			c.finished = finished
			c.err = f.Get(ctx, &c.out)
			l.judge(c)
			last = c
		})
	}
	l.status.Candidates = summarize(cands, nil, "")
	var winner *candidate
	for range cands {
		sel.Select(ctx)
		l.status.Candidates = summarize(cands, nil, "")
		if winner != nil {
			continue
		}
		if last.outcome == report.StatusComplete {
			// A complete the workflow accepted is a verified one (checkOutput).
			winner = last
			cancelRest()
		}
	}
	return l.settleCandidates(ctx, round, cands, winner)
}

// judge sorts a finished candidate: what it spent and its outcome.
func (l *loop) judge(c *candidate) {
	switch {
	case c.err != nil && temporal.IsCanceledError(c.err):
		c.outcome, c.spent, c.failure = CandidateCancelled, cancelledUsage(c.err), candidateFailure(c.err)
	case c.err != nil:
		c.outcome, c.spent, c.problem, c.failure = CandidateFailed, failedUsage(c.err), c.err.Error(), candidateFailure(c.err)
	case c.out.Deferred != nil:
		c.outcome, c.spent, c.problem = CandidateDeferred, c.out.Usage, c.out.Deferred.Reason
	default:
		c.spent = c.out.Usage
		if err := l.checkOutput(c.out); err != nil {
			c.outcome, c.problem = CandidateInvalid, err.Error()
			return
		}
		c.outcome = c.out.Report.Status
	}
}

// settleCandidates ends a round whose candidates all finished: a cancel,
// the round's failure or deferral, or the chosen candidate adopted.
func (l *loop) settleCandidates(ctx workflow.Context, round int, cands []*candidate, winner *candidate) (activities.RoundOutput, error) {
	var spent usage.Usage
	for _, c := range cands {
		spent = spent.Add(c.spent)
	}
	if ctx.Err() != nil {
		l.usage = l.usage.Add(spent)
		return activities.RoundOutput{}, l.cancelled(ctx, round, ctx.Err())
	}
	valid := slices.DeleteFunc(slices.Clone(cands), func(c *candidate) bool { return !c.valid() })
	if len(valid) == 0 {
		return l.noCandidate(ctx, round, cands, spent)
	}
	chosen, reason := winner, "a verified complete, the first candidate to finish one"
	if chosen == nil {
		chosen, reason = l.chooseCandidate(ctx, round, valid)
	}
	l.status.Candidates = summarize(cands, chosen, reason)
	if err := l.adopt(ctx, round, chosen); err != nil {
		l.usage = l.usage.Add(spent)
		l.stop(ctx, OutcomeFailed, round)
		return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("round %d failed: %v", round, err), ErrTypeRoundFailed, err,
			RoundFailedDetails{FailedRound: round, LastHandoff: l.last, Usage: spent, RunUsage: l.usage})
	}
	out := chosen.out
	out.Usage = spent
	return out, nil
}

// noCandidate ends a round none of whose candidates handed off: deferred
// when one was (the round runs again after the wait), else failed.
func (l *loop) noCandidate(ctx workflow.Context, round int, cands []*candidate, spent usage.Usage) (activities.RoundOutput, error) {
	for _, c := range cands {
		if c.outcome == CandidateDeferred && l.limits.Deferrals() {
			out := c.out
			out.Usage = spent
			return out, nil
		}
	}
	problems := make([]string, 0, len(cands))
	for _, c := range cands {
		problems = append(problems, fmt.Sprintf("candidate %d %s: %s", c.spec.Number, c.outcome, c.problem))
	}
	l.usage = l.usage.Add(spent)
	l.stop(ctx, OutcomeFailed, round)
	return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("round %d failed: every candidate failed (%s)", round, strings.Join(problems, "; ")), ErrTypeRoundFailed, nil,
		RoundFailedDetails{FailedRound: round, LastHandoff: l.last, Usage: spent, RunUsage: l.usage})
}

// chooseCandidate picks among valid candidates none of which completed:
// the reviewer's choice when the reviewer is on, else the ranking
// (rankCandidates). It returns the choice and why.
func (l *loop) chooseCandidate(ctx workflow.Context, round int, valid []*candidate) (*candidate, string) {
	if l.review && len(valid) > 1 {
		if c, why := l.reviewerChoice(ctx, round, valid); c != nil {
			return c, why
		}
	}
	ranked := rankCandidates(valid, l.limits.CandidateScore == activities.CandidateScoreVerify)
	return ranked[0], rankReason(ranked, l.limits.CandidateScore == activities.CandidateScoreVerify)
}

// outcomeRank orders report statuses: complete, continue, blocked.
func outcomeRank(status string) int {
	return slices.Index([]string{report.StatusComplete, report.StatusContinue, report.StatusBlocked}, status)
}

// scorePassed: the candidate's tree passed the verify command.
func scorePassed(c *candidate) bool {
	return c.out.Candidate != nil && c.out.Candidate.Verification.Passed()
}

// diffSize is how many lines the candidate's change adds and removes.
func diffSize(c *candidate) int {
	if c.out.Checkpoint == nil {
		return 0
	}
	return c.out.Checkpoint.Insertions + c.out.Checkpoint.Deletions
}

// unchanged: the candidate's tree equals the round's base. Its activity
// says so (CandidateWork.Unchanged), so a history recorded before this
// rule, whose outputs lack it, replays the choice it made.
func unchanged(c *candidate) bool {
	return c.out.Candidate != nil && c.out.Candidate.Unchanged
}

// candidateOrder compares two candidates by the ranking's criteria in
// turn: outcome, a change at all (a tree equal to the base ranks after
// every one with the same outcome that changed something), a passing
// verify (scoreVerify), the smaller diff, the first finished. It returns the
// comparison and the criterion that decided.
func candidateOrder(a, b *candidate, scoreVerify bool) (int, string) {
	if c := cmp.Compare(outcomeRank(a.outcome), outcomeRank(b.outcome)); c != 0 {
		return c, "the best report status"
	}
	if unchanged(a) != unchanged(b) {
		if unchanged(b) {
			return -1, "it changed something (another left the tree as the base)"
		}
		return 1, "it changed something (another left the tree as the base)"
	}
	if scoreVerify && scorePassed(a) != scorePassed(b) {
		if scorePassed(a) {
			return -1, "its tree passed the verify command"
		}
		return 1, "its tree passed the verify command"
	}
	if c := cmp.Compare(diffSize(a), diffSize(b)); c != 0 {
		return c, "the smallest diff"
	}
	return cmp.Compare(a.finished, b.finished), "the first to finish"
}

// rankCandidates sorts candidates best first.
func rankCandidates(cands []*candidate, scoreVerify bool) []*candidate {
	ranked := slices.Clone(cands)
	slices.SortStableFunc(ranked, func(a, b *candidate) int {
		c, _ := candidateOrder(a, b, scoreVerify)
		return c
	})
	return ranked
}

// rankReason says why the first of ranked won: the criterion that put it
// before the runner-up.
func rankReason(ranked []*candidate, scoreVerify bool) string {
	if len(ranked) == 1 {
		return "the only candidate that handed off"
	}
	_, why := candidateOrder(ranked[0], ranked[1], scoreVerify)
	return fmt.Sprintf("%s (%s, %d lines changed)", why, ranked[0].outcome, diffSize(ranked[0]))
}

// candidateSpec is candidate k of of: its agent and model cycled from the
// deployment's lists.
func (l *loop) candidateSpec(k, of int) activities.CandidateSpec {
	s := activities.CandidateSpec{Number: k, Of: of, ScoreVerify: l.limits.CandidateScore == activities.CandidateScoreVerify}
	if n := len(l.limits.CandidateAgents); n > 0 {
		s.Agent = l.limits.CandidateAgents[(k-1)%n]
	}
	if n := len(l.limits.CandidateModels); n > 0 {
		s.Model = l.limits.CandidateModels[(k-1)%n]
	}
	return s
}

// resolvedSpec is who runs a candidate of spec as status shows it before it
// says itself: the spec's provider and model, the worker's defaults filled
// in where the recorded limits carry them.
func (l *loop) resolvedSpec(spec activities.CandidateSpec) (provider, model string) {
	provider = orElse(spec.Agent, l.limits.CandidateDefaultAgent)
	return provider, orElse(spec.Model, l.limits.CandidateDefaultModels[provider])
}

// adopt makes the chosen candidate's commit the workspace's checkpoint.
func (l *loop) adopt(ctx workflow.Context, round int, c *candidate) error {
	if c.out.Checkpoint == nil || c.out.Candidate == nil {
		return fmt.Errorf("candidate %d returned no checkpoint", c.spec.Number)
	}
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: adoptTimeout,
		Summary:             fmt.Sprintf("Round %d: adopt candidate %d", round, c.spec.Number),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: roundRetryInitialInterval, BackoffCoefficient: 2, MaximumInterval: roundRetryMaxInterval,
			MaximumAttempts:        int32(l.limits.RoundAttempts),
			NonRetryableErrorTypes: []string{activities.ErrTypeChildFailed, activities.ErrTypeBadRoundInput},
		},
	}
	in := activities.AdoptInput{Workspace: l.workspace, Round: round, MaxRounds: l.maxRounds,
		Base: c.out.Checkpoint.Parent, Commit: c.out.Checkpoint.Commit, Ref: c.out.Candidate.Ref}
	if l.limits.CandidateAdoptLocal {
		// A few git commands: run them in the workflow task that chose,
		// rather than paying a dispatch and another workflow task.
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: opts.StartToCloseTimeout, RetryPolicy: opts.RetryPolicy, Summary: opts.Summary,
		})
		return workflow.ExecuteLocalActivity(lctx, activities.AdoptCandidateName, in).Get(ctx, nil)
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activities.AdoptCandidateName, in).Get(ctx, nil)
}

// summarize lists the candidates for the status and the round's summary;
// chosen (nil while the round runs) is marked with why. Every finished
// candidate names the provider and model that ran it as the worker resolved
// them (its output, or its failure's details); a running one, its spec's
// with the worker's recorded defaults filled in.
func summarize(cands []*candidate, chosen *candidate, reason string) []CandidateSummary {
	out := make([]CandidateSummary, 0, len(cands))
	for _, c := range cands {
		s := CandidateSummary{Number: c.spec.Number, Provider: c.provider, Model: c.model, Outcome: c.outcome,
			Problem: cutText(c.problem, MaxStatusSummaryChars), Usage: c.spent, Chosen: c == chosen}
		if f := c.failure; f != nil {
			s.Provider, s.Model, s.Ref = orElse(f.Provider, s.Provider), orElse(f.Model, s.Model), f.Ref
		}
		if w := c.out.Candidate; w != nil {
			s.Provider, s.Model = orElse(w.Agent, s.Provider), orElse(w.Model, s.Model)
			s.DiffStat = cutText(w.DiffStat, MaxStatusSummaryChars)
			if c != chosen {
				s.Ref = w.Ref
			}
		}
		if c.valid() {
			s.Summary, s.Model = cutText(c.out.Report.Summary, MaxStatusSummaryChars), orElse(c.out.Model, s.Model)
			s.Verified = c.out.Verification.Passed() || scorePassed(c)
		}
		if c.out.Checkpoint != nil {
			s.Commit = c.out.Checkpoint.Commit
		}
		if c == chosen {
			s.Reason = cutText(reason, MaxStatusSummaryChars)
		}
		out = append(out, s)
	}
	return out
}

func orElse(v, fallback string) string {
	if v != "" {
		return v
	}
	return fallback
}

// candidateFailure is what a failed or cancelled candidate attempt's
// details say of it (nil from workers that predate it, or a timeout).
func candidateFailure(err error) *activities.CandidateFailure {
	var appErr *temporal.ApplicationError
	var ce *temporal.CanceledError
	var d activities.FailureDetails
	switch {
	case errors.As(err, &appErr) && appErr.HasDetails():
		if appErr.Details(&d) != nil {
			return nil
		}
	case errors.As(err, &ce) && ce.HasDetails():
		if ce.Details(&d) != nil {
			return nil
		}
	}
	return d.Candidate
}

// reviewerChoice asks the independent reviewer to choose between valid
// candidates, none of which completed: one review that sees each one's
// report and diff stat. A review that fails, defers or names no valid
// candidate leaves the choice to the ranking (nil); its usage counts.
func (l *loop) reviewerChoice(ctx workflow.Context, round int, valid []*candidate) (*candidate, string) {
	in := activities.ReviewInput{
		Objective: l.objective, Round: round, MaxRounds: l.maxRounds, Workspace: l.workspace,
		MaxHandoffChars: l.limits.MaxHandoffChars, TokenBudget: l.budget.tokensLeft(l.usage), RunDeadline: l.budget.Deadline,
	}
	for _, c := range valid {
		rc := activities.ReviewCandidate{Number: c.spec.Number, Model: c.out.Model, Report: c.out.Report}
		if w := c.out.Candidate; w != nil {
			rc.Agent, rc.DiffStat = w.Agent, w.DiffStat
		}
		in.Candidates = append(in.Candidates, rc)
	}
	label := fmt.Sprintf("Round %d of %d: the reviewer chooses a candidate", round, l.maxRounds)
	workflow.SetCurrentDetails(ctx, label)
	opts := l.roundOptions(label)
	opts.ActivityID = fmt.Sprintf("round-%d-choice", round)
	var rv activities.ReviewOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activities.ReviewCompletionName, in).Get(ctx, &rv)
	if err != nil {
		l.usage = l.usage.Add(failedUsage(err))
		workflow.GetLogger(ctx).Warn("The reviewer's choice failed; candidates are ranked instead", "round", round, "error", err)
		return nil, ""
	}
	l.usage = l.usage.Add(rv.Usage)
	if rv.Review.Verdict == report.VerdictChoose {
		for _, c := range valid {
			if c.spec.Number == rv.Review.Choice {
				return c, "the reviewer's choice: " + rv.Review.Summary
			}
		}
	}
	workflow.GetLogger(ctx).Warn("The reviewer named no valid candidate; candidates are ranked instead", "round", round, "choice", rv.Review.Choice)
	return nil, ""
}
