package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	// Candidate says, for a candidate attempt, who ran it and where what
	// it wrote is kept.
	Candidate *CandidateFailure `json:"candidate,omitempty"`
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
//   - a cancel the server asked for: a cancellation carrying what the
//     attempts spent; a worker shutting down: the context's error;
//   - anything else (disk, harness): a retryable RoundError carrying what
//     the attempts spent.
//
// Failures before the session go through setupError and the session's
// through roundError, in ReviewCompletion too: both open through
// openAttempt.
func (a *Activities) RunRound(ctx context.Context, in RoundInput) (out RoundOutput, err error) {
	if err := checkRoundInput(in); err != nil {
		return RoundOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadRoundInput, nil)
	}
	steps := newStepClock()
	ctx, at, err := a.openAttempt(ctx, opening{span: tracing.SpanRound, round: in.Round, workspace: in.Workspace, transcript: transcriptPrefix(in)})
	if err != nil {
		return RoundOutput{}, err
	}
	defer func() { at.close(err, tracing.AttrReportStatus.String(string(out.Report.Status))) }()
	steps.mark("lock")
	ws, err := a.beginWorkspace(ctx, at.dir, in, at.before())
	if err != nil {
		return RoundOutput{}, at.setupFailed(ctx, err)
	}
	steps.mark("prepare")
	dir := at.dir
	var cand *candidateTree
	if in.Candidate != nil {
		if cand, err = a.beginCandidate(ctx, ws, *in.Candidate, at.before()); err != nil {
			return RoundOutput{}, at.setupFailed(ctx, err)
		}
		defer cand.remove(ctx)
		// The candidate works its own tree: the workspace is free for the
		// other candidates to start from.
		if err = a.relock(ctx, at, cand.name); err != nil {
			return RoundOutput{}, at.setupFailed(ctx, err)
		}
		steps.mark("edits")
		if err = cand.start(ctx, at.before()); err != nil {
			return RoundOutput{}, at.setupFailed(ctx, err)
		}
		dir = cand.dir
		steps.mark("tree")
	}
	who, res, err := a.runRoundSession(ctx, at, in, dir)
	steps.mark("session")
	if cand != nil {
		at.candidate = &CandidateFailure{Provider: who.provider, Model: who.model}
		if err != nil {
			// A failed, cancelled or deferred candidate keeps what it wrote.
			at.candidate.Ref = cand.keep(ctx, err)
		}
	}
	spent, deferred, err := a.sessionOutcome(ctx, at, "Round", in.Round, res, err)
	if deferred != nil {
		// What the session wrote stays in the workspace (no checkpoint:
		// there is no report to commit it under).
		return RoundOutput{Usage: spent, SessionID: at.sessionID, Model: res.Model, FirstRequestTokens: res.FirstPromptTokens, Deferred: deferred}, nil
	}
	if err != nil {
		return RoundOutput{}, err
	}
	out = RoundOutput{Report: res.Report, Usage: spent, SessionID: at.sessionID, Verification: res.Verification, Model: res.Model,
		FirstRequestTokens: res.FirstPromptTokens, Restored: res.Restored, BudgetForced: budgetForced(res.ForcedBound)}
	details := FailureDetails{SessionID: at.sessionID, Usage: spent}
	if cand != nil {
		if out.Checkpoint, out.WorkspaceChanged, out.Candidate, err = cand.finish(ctx, res.Report, details); err != nil {
			return RoundOutput{}, err
		}
		out.Candidate.Agent, out.Candidate.Model = who.provider, who.model
		steps.mark("keep")
		a.scoreCandidate(ctx, cand, in, res.Report, out.Candidate)
		steps.mark("score")
	} else if out.Checkpoint, out.WorkspaceChanged, err = ws.finish(ctx, res.Report, details); err != nil {
		return RoundOutput{}, err
	} else {
		steps.mark("keep")
	}
	at.logger.Info("Round steps", append([]any{"round", in.Round, "candidate", in.Candidate.GetNumber()}, steps.fields()...)...)
	if len(out.Restored) > 0 {
		at.logger.Info("Restored protected paths the session changed", "round", in.Round, "paths", out.Restored)
	}
	return out, nil
}

// runRoundSession runs the round's session on dir (the workspace, or a
// candidate's tree) and records its metrics; it returns who ran it.
func (a *Activities) runRoundSession(ctx context.Context, at *attempt, in RoundInput, dir string) (sessionAgent, agent.Result, error) {
	info := activity.GetInfo(ctx)
	at.logger.Info("Round started", "round", in.Round, "maxRounds", in.MaxRounds, "attempt", info.Attempt,
		"sessionId", at.sessionID, "workspace", in.Workspace, "transcript", at.transcriptPath)
	who, provider := a.roundProvider(in)
	var spec CandidateSpec // zero for a plain round
	if in.Candidate != nil {
		spec = *in.Candidate
	}
	tally, started := newRoundTally(), time.Now()
	res, err := provider.Run(ctx, agent.Request{
		SessionID: at.sessionID, Objective: in.Objective, Round: in.Round, MaxRounds: in.MaxRounds,
		Previous: in.Previous, Workspace: dir, ToolCacheLine: ToolCacheLine(in.Workspace), MaxHandoffChars: in.MaxHandoffChars,
		Deadline: roundDeadline(info), VerifyCommand: in.VerifyCommand, TokenBudget: in.TokenBudget, RunDeadline: in.RunDeadline,
		ProtectedPaths: in.ProtectedPaths,
		Deferrable:     in.Deferrable,
		Guidance:       in.Guidance,
		Candidate:      spec.Number, Candidates: spec.Of, CampaignObjective: in.CampaignObjective,
	}, agent.Observers(at.transcript, at.hb, tally, providerWarnings(at.logger, in.Round)))
	tally.record(activity.GetMetricsHandler(ctx), roundOutcome(res, err), res.Usage, time.Since(started))
	at.logger.Info("Round ended", "round", in.Round, "sessionId", at.sessionID, "outcome", agent.Outcome(err),
		"modelCalls", res.Usage.ModelCalls, "toolCalls", res.Usage.ToolCalls)
	return who, res, err
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

// sessionAgent is who runs a session: the provider (a RALPH_AGENT value)
// and the model it is configured with, both resolved (the worker's
// defaults filled in).
type sessionAgent struct {
	provider, model string
}

// roundProvider is the provider of a round's session and who it is: the
// worker's RALPH_AGENT and RALPH_MODEL (RALPH_AGENT_MODEL for a CLI) unless
// the round is a candidate that names its own.
func (a *Activities) roundProvider(in RoundInput) (sessionAgent, agent.Provider) {
	kind, cfg, settings := a.cfg.Agents.Agent, a.cfg.Agent, a.cfg.Agents
	if c := in.Candidate; c != nil {
		if c.Agent != "" {
			kind = c.Agent
		}
		if c.Model != "" {
			cfg.Model, settings.Model = c.Model, c.Model
		}
	}
	return resolveAgent(kind, cfg.Model, settings.Model), a.provider(kind, cfg, settings)
}

// resolveAgent is who a session of kind runs as, given the builtin's model
// and the CLIs' (cliModel, "" for RALPH_MODEL): as cli.Settings.Provider
// picks the model.
func resolveAgent(kind, model, cliModel string) sessionAgent {
	who := sessionAgent{provider: kind, model: model}
	if kind == "" {
		who.provider = cli.Builtin
	}
	if _, isCLI := cli.Lookup(kind); isCLI && cliModel != "" {
		who.model = cliModel
	}
	return who
}

// candidateDefaults are the provider a candidate runs when
// RALPH_CANDIDATE_AGENTS names none (RALPH_AGENT) and the model each
// provider a candidate may run uses when RALPH_CANDIDATE_MODELS names none:
// what the workflow shows for a candidate that is still running.
func (a *Activities) candidateDefaults() (string, map[string]string) {
	agentKind := resolveAgent(a.cfg.Agents.Agent, "", "").provider
	models := map[string]string{}
	for _, kind := range append([]string{agentKind}, a.cfg.Limits.CandidateAgents...) {
		models[kind] = resolveAgent(kind, a.cfg.Agent.Model, a.cfg.Agents.Model).model
	}
	return agentKind, models
}

// transcriptPrefix begins a round attempt's transcript file:
// round-<R>[-candidate-<k>]-attempt-<A>-<session id>.jsonl.
func transcriptPrefix(in RoundInput) string {
	if in.Candidate != nil {
		return fmt.Sprintf("round-%d-candidate-%d", in.Round, in.Candidate.Number)
	}
	return fmt.Sprintf("round-%d", in.Round)
}

// unavailable is a provider whose CLI cannot be found any more (it was at
// start): the round fails as a harness error and is retried.
type unavailable struct{ err error }

func (u unavailable) Run(context.Context, agent.Request, agent.Observer) (agent.Result, error) {
	return agent.Result{}, u.err
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

// roundDeadline is the session's own deadline: Temporal's deadline for this
// attempt minus a margin (none when Temporal set none).
func roundDeadline(info activity.Info) time.Time {
	if info.Deadline.IsZero() {
		return time.Time{}
	}
	total := info.Deadline.Sub(info.StartedTime)
	return info.Deadline.Add(-min(maxDeadlineMargin, total/10))
}

// isUnreadable reports whether err is a workspace walk that met a directory
// the worker could neither read nor make readable: the round cannot be
// checked, and a retry would meet the same directory.
func isUnreadable(err error) bool {
	var re *readable.Error
	return errors.As(err, &re)
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
