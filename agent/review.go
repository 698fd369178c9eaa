package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	openai "github.com/sashabaranov/go-openai"
	"github.com/sashabaranov/go-openai/jsonschema"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/report"
)

// SubmitReviewTool is the reviewer's only way to end its session.
const SubmitReviewTool = "submit_review"

// ReviewSubject is what an independent reviewer checks: the accepted
// completion, its verification (if one applied) and, in git modes, the
// run's change.
type ReviewSubject struct {
	Report       report.Report
	Verification *report.Verification
	// Diff is the diff stat and patch from Base to Commit, already cut to
	// the deployment's budget ("" when git checkpoints are off).
	Diff         string
	Base, Commit string
}

// reviewParams is submit_review's parameter schema as a tagged struct;
// report.DecodeReview (strict: these three keys) decodes the arguments.
type reviewParams struct {
	Verdict  string   `json:"verdict" enum:"approve,revise" description:"approve: the objective is met as stated; revise: it is not, and the findings say what must change."`
	Summary  string   `json:"summary" description:"Your assessment in one short paragraph. Non-empty, trimmed."`
	Findings []string `json:"findings" description:"What must change, each a concrete, checkable step for the next worker (at least one for revise); [] when none."`
}

func submitReviewDefinition(maxChars int) (openai.Tool, error) {
	schema, err := jsonschema.GenerateSchemaForType(reviewParams{})
	if err != nil {
		return openai.Tool{}, fmt.Errorf("generate the submit_review schema: %w", err)
	}
	params, err := json.Marshal(schema)
	if err != nil {
		return openai.Tool{}, fmt.Errorf("encode the submit_review schema: %w", err)
	}
	description, err := render(textSubmitReview, systemData{MaxHandoffChars: maxChars})
	if err != nil {
		return openai.Tool{}, err
	}
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: SubmitReviewTool, Description: description, Parameters: json.RawMessage(params),
	}}, nil
}

// RunReview runs one independent reviewer session: RunSession with
// req.Review set. Result.Review carries the verdict.
func RunReview(ctx context.Context, cfg Config, req Request, obs Observer) (Result, error) {
	if req.Review == nil {
		return Result{}, errors.New("review request: nothing to review")
	}
	return RunSession(ctx, cfg, req, obs)
}

// reviewer is the role of an independent reviewer session: read-only
// tools on the workspace, its own prompts, and submit_review.
type reviewer struct{ subject *ReviewSubject }

func (reviewer) finishing() string { return SubmitReviewTool }

func (reviewer) texts() roleTexts {
	return roleTexts{system: textReviewSystem, reminder: textReviewReminder, finalReminder: textReviewFinalReminder, handoff: textReviewHandoff}
}

// workspace is read-only to the reviewer's commands; where they cannot get
// a read-only workspace (no bubblewrap), every path is protected instead,
// so all their changes are restored.
func (reviewer) workspace(cfg Config, req Request) (*tools.Workspace, *tools.ProtectedSnapshot, error) {
	opts := []tools.Option{tools.WithSandbox(cfg.Sandbox), tools.ReadOnly()}
	if cfg.Sandbox.Mode() != sandbox.ModeBwrap {
		sets := append(slices.Clone(req.ProtectedPaths), everything)
		if ws, snap, err := open(req, cfg, opts, sets); err == nil {
			return ws, snap, nil
		}
		// A workspace too large to hold in memory: the reviewer runs
		// with its read-only tools only (docs/guards.md).
	}
	return open(req, cfg, opts, req.ProtectedPaths)
}

// restoredNote is empty: the reviewer reports no work, so there is nothing
// to report without.
func (reviewer) restoredNote([]string) string { return "" }

// submit checks a reviewer's verdict; a valid one ends the session.
func (r reviewer) submit(_ context.Context, s *session, _ int, args string) (tools.Result, *report.Report, error) {
	v, err := r.check(s, args)
	if err != nil {
		res, ferr := s.rejected("review", err)
		return res, nil, ferr
	}
	s.review = &v
	return tools.Result{Output: "Review accepted. The review is over."}, &report.Report{}, nil
}

// check decodes and validates submit_review's arguments; a revise verdict
// must also make a valid continue handoff within the cap, so an over-long
// one is sent back to the reviewer to shorten.
func (r reviewer) check(s *session, args string) (report.Review, error) {
	cap := s.req.handoffCap()
	v, err := report.DecodeReview([]byte(args))
	if err != nil {
		return report.Review{}, err
	}
	if err := report.ValidateReview(v, cap); err != nil {
		return report.Review{}, err
	}
	if v.Verdict == report.VerdictRevise {
		if err := report.Validate(report.RevisionHandoff(r.subject.Report, v), cap); err != nil {
			return report.Review{}, fmt.Errorf("the next round's handoff built from this review is invalid (%v): shorten the summary or the findings", err)
		}
	}
	v.Model, v.SessionID = s.cfg.Model, s.req.SessionID
	return v, nil
}

type reviewData struct {
	roundData
	Report             string
	Verification       *report.Verification
	VerificationOutput string
	Diff, Base, Commit string
}

func (r reviewer) prompt(s *session) (string, error) {
	d := reviewData{roundData: s.boundsData()}
	rv := r.subject
	var err error
	if d.Report, err = report.Indented(rv.Report); err != nil {
		return "", fmt.Errorf("render the completion report: %w", err)
	}
	if rv.Verification != nil {
		d.Verification, d.VerificationOutput = rv.Verification, orNoOutput(rv.Verification.Output)
	}
	d.Diff, d.Base, d.Commit = rv.Diff, rv.Base, rv.Commit
	return render(textReview, d)
}
