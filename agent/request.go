package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Request is one round as one fresh session sees it.
type Request struct {
	// SessionID names this session in events and transcripts; fresh per attempt.
	SessionID string
	Objective string
	Round     int
	MaxRounds int
	// Previous is the last accepted report; nil in the first round.
	Previous *report.Report
	// Workspace is the directory the tools act on.
	Workspace string
	// MaxHandoffChars caps the report's compact JSON; 0 means the default.
	MaxHandoffChars int
	// Deadline, when set, is the round's own deadline: the session forces
	// its hand-off when most of the time to it is spent, and a session still
	// running at it ends as an ordinary child failure (distinct from a
	// cancel of ctx).
	Deadline time.Time
	// VerifyCommand, when set, runs in the workspace after a valid complete
	// report; only a passing run ends the session with that report.
	VerifyCommand string
	// TokenBudget is what is left of the run's token budget; the session
	// forces its hand-off before a request would pass it (0: none).
	TokenBudget int
	// RunDeadline is when the run's time budget ends; the session forces its
	// hand-off when 90 % of the time left to it is spent (zero: none).
	RunDeadline time.Time
	// ProtectedPaths are sets of gitignore-style patterns (the deployment's,
	// the run's), each evaluated on its own: what any set protects, the
	// model may read but not change (docs/guards.md#protected-paths).
	ProtectedPaths [][]string
	// Review, when set, makes this session the independent reviewer of an
	// accepted completion instead of a worker: read-only tools, its own
	// prompt, and submit_review instead of submit_report.
	Review *ReviewSubject
	// Plan, when set, makes this session a campaign wave's planner: the
	// reviewer's read-only tools and checkout, its own prompt, and
	// submit_plan instead of submit_report (plan.go).
	Plan *PlanSubject
	// Deferrable lets provider limits end the session as a deferral
	// (*DeferredError) instead of a failure: off for runs whose recorded
	// limits predate deferrals, which keep the old behaviour.
	Deferrable bool
	// CampaignObjective is a planned campaign's objective: the round
	// prompt shows it as context under its own heading (empty: none).
	CampaignObjective string
	// Guidance is an operator's text for this round (its prompt shows it
	// under "Guidance from the operator"); empty: none.
	Guidance string
	// Candidate is this session's place among the round's Candidates
	// fresh agents, each on its own copy of the workspace (0: the only one).
	Candidate, Candidates int
}

func (r Request) validate() error {
	switch {
	case r.Objective == "":
		return fmt.Errorf("session request: objective is empty")
	case r.Round < 1 || r.MaxRounds < r.Round:
		return fmt.Errorf("session request: round %d of %d is out of range", r.Round, r.MaxRounds)
	case r.Workspace == "":
		return fmt.Errorf("session request: workspace directory is empty")
	case r.MaxHandoffChars < 0:
		return fmt.Errorf("session request: max handoff chars is negative (%d)", r.MaxHandoffChars)
	case r.TokenBudget < 0:
		return fmt.Errorf("session request: token budget is negative (%d)", r.TokenBudget)
	case r.VerifyCommand != "" && strings.TrimSpace(r.VerifyCommand) == "":
		return fmt.Errorf("session request: verify command is only whitespace")
	case r.Plan != nil && r.Review != nil:
		return fmt.Errorf("session request: a session plans or reviews, not both")
	case r.Plan != nil && r.Plan.Wave < 1:
		return fmt.Errorf("session request: wave %d is out of range", r.Plan.Wave)
	}
	return nil
}

func (r Request) handoffCap() int {
	if r.MaxHandoffChars == 0 {
		return DefaultMaxHandoffChars
	}
	return r.MaxHandoffChars
}

// Result is what a session produced. Usage is filled even when the session
// failed, so a failed round still accounts for what it spent.
type Result struct {
	Report report.Report
	Usage  usage.Usage
	// Verification is the passing verify run of a complete report.
	Verification *report.Verification
	// Restored lists the protected paths the session restored, sorted ([]
	// when none).
	Restored []string
	// Review is a reviewer session's verdict (Model and SessionID filled).
	Review *report.Review
	// Plan is a planner session's validated plan.
	Plan *plan.Plan
	// Model is the model that produced the report (on a deferral or a
	// failure: the model in use when the session ended).
	Model string
	// FirstPromptTokens is what the provider counted for the session's first
	// request, or the estimate booked for it when the provider gave no
	// usage (0: no call completed): the fixed cost of starting a round.
	FirstPromptTokens int
	// ForcedBound names the bound that forced the session's hand-off (""
	// when none did): the workflow ends the run after a round a budget forced.
	ForcedBound string
}
