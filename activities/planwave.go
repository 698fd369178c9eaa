package activities

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// ErrTypeBadPlan: the planner's accepted plan failed the wave's rules when
// checked again (a harness bug, never the model's). Non-retryable.
const ErrTypeBadPlan = "BadPlan"

// planWorkspace is where wave's planner works: a scratch checkout of the
// integration head under the campaign's directory, removed afterwards.
func planWorkspace(campaign string, wave int) string {
	return filepath.Join(campaignDir(campaign), fmt.Sprintf("plan-%d", wave))
}

// PlanWave runs one wave's planning round (SPEC 40, docs/campaigns.md): a
// fresh planner session on a scratch checkout of the integration line at
// in.Head, read-only to its commands, that ends with a plan submit_plan
// validated against in.Rules. Its attempt is a round's: its own session id
// and transcript (plan-<wave>-attempt-<A>-<session id>.jsonl), heartbeats,
// the workspace lock, and failures mapped as RunRound's.
func (a *Activities) PlanWave(ctx context.Context, in PlanWaveInput) (out PlanWaveOutput, err error) {
	if err := checkPlanInput(in); err != nil {
		return PlanWaveOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRoundInput, nil)
	}
	in.Rules = a.planRules(in.Rules)
	subject := &agent.PlanSubject{Wave: in.Wave, Head: in.Head, Rejected: in.Guidance, Rules: in.Rules}
	if in.Report != nil {
		fitted, err := in.Report.Fit(in.MaxHandoffChars)
		if err != nil {
			return PlanWaveOutput{}, temporal.NewNonRetryableApplicationError("bad plan input: the last wave's report: "+err.Error(), ErrTypeBadRoundInput, nil)
		}
		subject.Report = &fitted
	}
	workspace := planWorkspace(in.Line.Campaign, in.Wave)
	ctx, at, err := a.openAttempt(ctx, opening{span: tracing.SpanPlan, round: in.Wave, workspace: workspace,
		transcript: fmt.Sprintf("plan-%d", in.Wave)})
	if err != nil {
		return PlanWaveOutput{}, err
	}
	defer func() { at.close(err, tracing.AttrPlanStatus.String(out.Plan.Status)) }()
	c, err := a.planCheckout(ctx, in, subject)
	if err != nil {
		return PlanWaveOutput{}, at.setupFailed(ctx, err)
	}
	defer c.remove(ctx)
	at.dir = c.scratch
	who, res, err := a.runPlanSession(ctx, at, in, subject)
	spent, _, err := a.sessionOutcome(ctx, at, "Plan", in.Wave, res, err)
	if err != nil {
		return PlanWaveOutput{}, err
	}
	if res.Plan == nil {
		return PlanWaveOutput{}, temporal.NewNonRetryableApplicationError("the planner's session ended without a plan", ErrTypeBadPlan, nil)
	}
	if err := plan.Validate(*res.Plan, in.Rules); err != nil {
		return PlanWaveOutput{}, temporal.NewNonRetryableApplicationError("the accepted plan is invalid: "+err.Error(), ErrTypeBadPlan, nil)
	}
	return PlanWaveOutput{Plan: *res.Plan, Usage: spent, SessionID: at.sessionID, Provider: who.provider, Model: who.model}, nil
}

// planRules fills what the workflow left to the worker: the wave's task
// ceiling (RALPH_MAX_WAVE_TASKS) and a task objective's bound.
func (a *Activities) planRules(r plan.Rules) plan.Rules {
	if r.MaxTasks <= 0 {
		r.MaxTasks = a.cfg.Limits.MaxWaveTasks
	}
	if r.MaxObjectiveChars <= 0 {
		r.MaxObjectiveChars = a.cfg.Limits.MaxObjectiveChars
	}
	return r
}

// planCheckout makes the planner's scratch checkout: the integration line
// fetched (created from its base when missing) and in.Head checked out
// within the tree bounds; with no Head, the line's head (subject.Head set).
func (a *Activities) planCheckout(ctx context.Context, in PlanWaveInput, subject *agent.PlanSubject) (*campaignGit, error) {
	c, err := a.campaignGit(ctx, in.Line, filepath.Base(planWorkspace(in.Line.Campaign, in.Wave)))
	if err != nil {
		return nil, err
	}
	head, err := a.git.Integration(ctx, c.scratch, c.line)
	if err == nil {
		if subject.Head == "" {
			subject.Head = head
		}
		err = a.git.CheckoutCommit(ctx, c.scratch, subject.Head, "the integration head")
	}
	if err != nil {
		c.remove(ctx)
		var big *gitws.TreeTooBigError
		if errors.As(err, &big) {
			return nil, temporal.NewNonRetryableApplicationError("the planner's checkout: "+err.Error(), ErrTypeCampaignGit, nil)
		}
		return nil, campaignStepError(err)
	}
	return c, nil
}

// runPlanSession runs the planner (in.Agent, else RALPH_PLAN_AGENT, else
// RALPH_AGENT; in.Model, else RALPH_PLAN_MODEL, else the round's model)
// and records its usage like a round's.
func (a *Activities) runPlanSession(ctx context.Context, at *attempt, in PlanWaveInput, subject *agent.PlanSubject) (sessionAgent, agent.Result, error) {
	kind, cfg, settings := a.cfg.Agents.PlanAgent(), a.cfg.Agent, a.cfg.Agents
	if in.Agent != "" {
		kind = in.Agent
	}
	if model := cmp.Or(in.Model, a.cfg.PlanModel); model != "" {
		cfg.Model, settings.Model = model, model
	}
	who := resolveAgent(kind, cfg.Model, settings.Model)
	info := activity.GetInfo(ctx)
	at.logger.Info("Planning started", "wave", in.Wave, "attempt", info.Attempt, "sessionId", at.sessionID,
		"agent", who.provider, "model", who.model, "head", subject.Head, "transcript", at.transcriptPath)
	tally := newRoundTally()
	res, err := a.provider(kind, cfg, settings).Run(ctx, agent.Request{
		SessionID: at.sessionID, Objective: in.Objective, Round: in.Wave, MaxRounds: in.Wave,
		Workspace: at.dir, MaxHandoffChars: in.MaxHandoffChars, Deadline: roundDeadline(info),
		TokenBudget: in.TokenBudget, RunDeadline: in.RunDeadline, Plan: subject,
	}, agent.Observers(at.transcript, at.hb, tally))
	tally.recordUsage(activity.GetMetricsHandler(ctx), res.Usage)
	status := agent.Outcome(err)
	if err == nil && res.Plan != nil {
		status = res.Plan.Status
	}
	at.logger.Info("Planning ended", "wave", in.Wave, "sessionId", at.sessionID, "status", status,
		"modelCalls", res.Usage.ModelCalls, "toolCalls", res.Usage.ToolCalls)
	if err != nil {
		return who, res, fmt.Errorf("planning: %w", err)
	}
	return who, res, nil
}

func checkPlanInput(in PlanWaveInput) error {
	if err := CheckWorkspace(planWorkspace(in.Line.Campaign, in.Wave)); err != nil || in.Line.Campaign == "" || filepath.Base(in.Line.Campaign) != in.Line.Campaign {
		return fmt.Errorf("bad plan input: campaign %q is not one path segment", in.Line.Campaign)
	}
	switch {
	case in.Line.Branch == "":
		return errors.New("bad plan input: the integration branch is empty")
	case in.Wave < 1:
		return fmt.Errorf("bad plan input: wave %d is out of range", in.Wave)
	case in.Objective == "":
		return errors.New("bad plan input: objective is empty")
	case in.MaxHandoffChars <= 0:
		return fmt.Errorf("bad plan input: maxHandoffChars must be positive, got %d", in.MaxHandoffChars)
	case in.TokenBudget < 0:
		return fmt.Errorf("bad plan input: tokenBudget is negative (%d)", in.TokenBudget)
	}
	return nil
}
