package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
	// Candidates, when set, make the review a choice between a round's
	// candidates, none of which completed (Report and Diff are unused).
	Candidates []ReviewCandidate
}

// ReviewCandidate is what a choosing reviewer sees of one candidate.
type ReviewCandidate struct {
	Number       int
	Agent, Model string
	Report       report.Report
	DiffStat     string
}

// choosing reports whether the subject asks for a choice between candidates.
func (s *ReviewSubject) choosing() bool { return s != nil && len(s.Candidates) > 0 }

// numbers lists the candidates a choice may name.
func (s *ReviewSubject) numbers() []int {
	n := make([]int, 0, len(s.Candidates))
	for _, c := range s.Candidates {
		n = append(n, c.Number)
	}
	return n
}

// reviewParams is submit_review's parameter schema as a tagged struct;
// report.DecodeReview (strict: these three keys) decodes the arguments.
type reviewParams struct {
	Verdict  string   `json:"verdict" enum:"approve,revise" description:"approve: the objective is met as stated; revise: it is not, and the findings say what must change."`
	Summary  string   `json:"summary" description:"Your assessment in one short paragraph. Non-empty, trimmed."`
	Findings []string `json:"findings" description:"What must change, each a concrete, checkable step for the next worker (at least one for revise); [] when none."`
}

// choiceParams is submit_review's schema for a reviewer choosing between
// candidates; report.DecodeChoice decodes it.
type choiceParams struct {
	Choice   int      `json:"choice" description:"The number of the candidate the next round starts from."`
	Summary  string   `json:"summary" description:"Why this candidate, in one short paragraph. Non-empty, trimmed."`
	Findings []string `json:"findings" description:"What the next worker should know about the chosen result; [] when none."`
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

func (r reviewer) texts() roleTexts {
	t := roleTexts{system: textReviewSystem, reminder: textReviewReminder, finalReminder: textReviewFinalReminder, handoff: textReviewHandoff}
	if r.subject.choosing() {
		t.system = textChoiceSystem
	}
	return t
}

// workspace is read-only to the reviewer's commands; where they cannot get
// a read-only workspace (no bubblewrap), every path is protected instead,
// so all their changes are restored.
func (reviewer) workspace(cfg Config, req Request) (*tools.Workspace, *tools.ProtectedSnapshot, error) {
	return readOnlyWorkspace(cfg, req)
}

// readOnlyWorkspace opens a workspace its session's commands cannot
// change: read-only under bubblewrap, every path protected (restored)
// otherwise. The reviewer's and the planner's.
func readOnlyWorkspace(cfg Config, req Request) (*tools.Workspace, *tools.ProtectedSnapshot, error) {
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
func (r reviewer) submit(_ context.Context, rd *round, _ int, args string) (tools.Result, *report.Report, error) {
	v, err := r.check(rd, args)
	if err != nil {
		res, ferr := rd.rejected("review", err)
		return res, nil, ferr
	}
	rd.review = &v
	return tools.Result{Output: "Review accepted. The review is over."}, &report.Report{}, nil
}

// check decodes and validates submit_review's arguments; a revise verdict
// must also make a valid continue handoff within the cap, so an over-long
// one is sent back to the reviewer to shorten.
func (r reviewer) check(rd *round, args string) (report.Review, error) {
	cap := rd.req.handoffCap()
	if r.subject.choosing() {
		v, err := report.DecodeChoice([]byte(args))
		if err == nil {
			err = report.ValidateChoice(v, r.subject.numbers(), cap)
		}
		v.Model, v.SessionID = rd.cfg.Model, rd.req.SessionID
		return v, err
	}
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
	v.Model, v.SessionID = rd.cfg.Model, rd.req.SessionID
	return v, nil
}

type reviewData struct {
	roundData
	Report             string
	Verification       *report.Verification
	VerificationOutput string
	Diff, Base, Commit string
}

// choiceData fills the choosing reviewer's prompt.
type choiceData struct {
	roundData
	Candidates []choiceCandidate
}

type choiceCandidate struct {
	Number               int
	Agent, Model, Report string
	DiffStat             string
}

func (r reviewer) prompt(rd *round) (string, error) {
	if r.subject.choosing() {
		d := choiceData{roundData: rd.boundsData()}
		for _, c := range r.subject.Candidates {
			text, err := report.Indented(c.Report)
			if err != nil {
				return "", fmt.Errorf("render candidate %d's report: %w", c.Number, err)
			}
			d.Candidates = append(d.Candidates, choiceCandidate{Number: c.Number, Agent: c.Agent, Model: c.Model, Report: text, DiffStat: c.DiffStat})
		}
		return render(textChoice, d)
	}
	d := reviewData{roundData: rd.boundsData()}
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
