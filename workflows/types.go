package workflows

import (
	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// Stable names: users, scripts and recorded histories depend on them.
const (
	WorkflowName     = "Ralph"
	DefaultTaskQueue = "ralph"
	StatusQueryName  = "status"
)

// Update names (operator control): each returns an Ack, except describe,
// which returns the (bounded) Status.
const (
	UpdateStop   = "stop"
	UpdatePause  = "pause"
	UpdateResume = "resume"
	// UpdateExtend raises a running run's budgets: an ExtendRequest.
	UpdateExtend = "extend"
	// UpdateDescribe changes nothing; starters send it with Update-with-Start.
	UpdateDescribe = "describe"
)

// ExtendRequest is the extend update's argument as the starter sends it
// (the workflow reads the raw JSON, so a float or an unknown key is named).
type ExtendRequest struct {
	MaxRounds  int `json:"maxRounds,omitempty"`
	MaxTokens  int `json:"maxTokens,omitempty"`
	MaxMinutes int `json:"maxMinutes,omitempty"`
}

// Search attributes the workflow upserts (when the deployment has them on).
const (
	SearchAttrPhase     = "RalphPhase"     // Keyword: starting, running, waiting, paused, awaiting-approval, finished
	SearchAttrRound     = "RalphRound"     // Int
	SearchAttrOutcome   = "RalphOutcome"   // Keyword, set when the run finishes
	SearchAttrWorkspace = "RalphWorkspace" // Keyword
)

// SearchAttribute is one search attribute a namespace must have.
type SearchAttribute struct {
	Name string
	// Type is the Temporal type name as `temporal operator search-attribute
	// create --type` takes it: Keyword or Int.
	Type string
}

// SearchAttributes lists what the worker checks at start and the dev-server
// and cluster setups register, in a fixed order.
func SearchAttributes() []SearchAttribute {
	return []SearchAttribute{
		{SearchAttrPhase, "Keyword"}, {SearchAttrRound, "Int"},
		{SearchAttrOutcome, "Keyword"}, {SearchAttrWorkspace, "Keyword"},
		{SearchAttrCampaign, "Keyword"},
	}
}

// Budget limits of a finished budget-limited run (Result.Limit).
const (
	LimitRounds = report.LimitRounds
	LimitTokens = report.LimitTokens
	LimitTime   = report.LimitTime
	LimitIdle   = report.LimitIdle
)

// Error types of the workflow's own failures (ApplicationError.Type()).
const (
	ErrTypeInvalidInput  = "InvalidInput"
	ErrTypeRoundFailed   = "RoundFailed"
	ErrTypeInvalidReport = "InvalidReport"
)

// Phases reported by the status query.
const (
	PhaseStarting = "starting"
	PhaseRunning  = "running"
	PhasePaused   = "paused"
	// PhaseWaiting: a deferred round waits on a durable timer before it runs
	// again (Status.WaitingUntil, Status.WaitReason).
	PhaseWaiting  = "waiting"
	PhaseFinished = "finished"
)

// Outcomes the status query reports besides the result statuses of report.Outcome*.
const (
	OutcomeCancelled = "cancelled"
	OutcomeFailed    = "failed"
)

// Input is what a caller may send: nothing else is accepted.
type Input struct {
	Objective string `json:"objective"`
	// MaxRounds lowers the deployment's round cap; nil means the ceiling.
	MaxRounds *int `json:"maxRounds,omitempty"`
	// Workspace is relative to the worker's workspace root; empty means the
	// workflow id, made path-safe.
	Workspace string `json:"workspace,omitempty"`
	// VerifyCommand must pass before a complete report is accepted.
	VerifyCommand string `json:"verifyCommand,omitempty"`
	// MaxTokens and MaxMinutes are the run's token and wall-clock budgets.
	MaxTokens  *int `json:"maxTokens,omitempty"`
	MaxMinutes *int `json:"maxMinutes,omitempty"`
	// ProtectedPaths are gitignore-style patterns the model may read but
	// not change, on top of the deployment's RALPH_PROTECTED_PATHS.
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
	// Review runs the independent reviewer after an accepted complete;
	// nil means the deployment's RALPH_REVIEW.
	Review *bool `json:"review,omitempty"`
	// Approve is none, complete or rounds:N (people.go); empty means the
	// deployment's RALPH_APPROVE.
	Approve string `json:"approve,omitempty"`
	// Candidates is how many fresh agents each round runs (candidates.go);
	// nil means the deployment's RALPH_CANDIDATES.
	Candidates *int `json:"candidates,omitempty"`
}

// Result is the workflow's successful result.
type Result struct {
	Status        string         `json:"status"`
	RoundsStarted int            `json:"roundsStarted"`
	Report        *report.Report `json:"report"` // null only for a stopped run that finished no round
	Usage         usage.Usage    `json:"usage"`
	// Limit names the budget that ended a budget-limited run.
	Limit string `json:"limit,omitempty"`
	// Verification is the passing verify run of a completed run.
	Verification *report.Verification `json:"verification,omitempty"`
	// Checkpoint is the last round's git checkpoint.
	Checkpoint *activities.Checkpoint `json:"checkpoint,omitempty"`
	// Reason is the stop update's reason: present (maybe "") exactly for stopped runs.
	Reason *string `json:"reason,omitempty"`
	// Review is the independent reviewer's approval of a completed run.
	Review *report.Review `json:"review,omitempty"`
}

// RoundFailedDetails are the details of a RoundFailed error.
type RoundFailedDetails struct {
	FailedRound int            `json:"failedRound"`
	LastHandoff *report.Report `json:"lastHandoff"`
	// Usage is what the failed round's attempts spent (also counted in the run's usage).
	Usage usage.Usage `json:"usage"`
	// RunUsage is the whole run's usage, the failed round's included:
	// what a parent campaign charges (RunUsageOf).
	RunUsage usage.Usage `json:"runUsage"`
}

// InvalidReportDetails are the details of an InvalidReport error: the round
// whose report the workflow refused and the last accepted handoff.
type InvalidReportDetails struct {
	Round       int            `json:"round"`
	Problem     string         `json:"problem"`
	LastHandoff *report.Report `json:"lastHandoff"`
	// RunUsage is the whole run's usage, the refused round's included.
	RunUsage usage.Usage `json:"runUsage"`
}

// RoundSummary is one finished round as the status query lists it.
type RoundSummary struct {
	Round     int    `json:"round"`
	Status    string `json:"status"`
	Summary   string `json:"summary"`
	SessionID string `json:"sessionId"`
	// Verified: the round's complete report passed the verify command.
	Verified bool `json:"verified,omitempty"`
	// Commit is the round's git checkpoint (git checkpoints on).
	Commit string `json:"commit,omitempty"`
	// Review is the independent reviewer's verdict on the round's
	// completion: approve or revise.
	Review string `json:"review,omitempty"`
	// Restored lists the protected paths the round restored (omitted when none).
	Restored []string `json:"restored,omitempty"`
	// Model is the model that produced the round's report.
	Model string `json:"model,omitempty"`
	// Deferrals is how often the round was deferred before it handed off.
	Deferrals int `json:"deferrals,omitempty"`
	// Candidates lists a round's candidates (when it ran more than one):
	// the chosen one marked with why.
	Candidates []CandidateSummary `json:"candidates,omitempty"`
}

// CandidateSummary is one of a round's candidates.
type CandidateSummary struct {
	Number int `json:"number"`
	// Provider and Model ran it, as the worker resolved them (its
	// defaults included; "" only in runs whose recorded limits predate
	// the defaults, until the candidate says).
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Outcome is its report's status, or running, failed, invalid,
	// cancelled or deferred; Problem says what went wrong.
	Outcome string      `json:"outcome"`
	Summary string      `json:"summary,omitempty"`
	Problem string      `json:"problem,omitempty"`
	Usage   usage.Usage `json:"usage"`
	// DiffStat is its change from the round's base; Commit its commit.
	DiffStat string `json:"diffStat,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// Verified: its tree passed the verify command (its complete's
	// verification, or RALPH_CANDIDATE_SCORE=verify).
	Verified bool `json:"verified"`
	// Ref keeps a candidate that was not chosen.
	Ref    string `json:"ref,omitempty"`
	Chosen bool   `json:"chosen"`
	// Reason says why the chosen candidate was chosen.
	Reason string `json:"reason,omitempty"`
}

// BudgetStatus shows the budgets that apply (null where none does).
type BudgetStatus struct {
	MaxTokens  *int `json:"maxTokens"`
	MaxMinutes *int `json:"maxMinutes"`
	// IdleRounds is the idle budget: consecutive rounds without a workspace change.
	IdleRounds *int `json:"idleRounds"`
}

// Ack is what an update returns (it is written to history: small on purpose).
type Ack struct {
	Phase          string `json:"phase"`
	Round          int    `json:"round"`
	StopRequested  bool   `json:"stopRequested"`
	PauseRequested bool   `json:"pauseRequested"`
}

// Status answers the status query.
type Status struct {
	Round      int            `json:"round"`
	MaxRounds  int            `json:"maxRounds"`
	Phase      string         `json:"phase"`
	Outcome    string         `json:"outcome"` // "" until the run finishes
	LastReport *report.Report `json:"lastReport"`
	// Rounds lists the last (at most MaxStatusRounds) rounds finished by
	// this workflow run, each summary cut at MaxStatusSummaryChars;
	// RoundsOmitted counts the earlier ones left out. Rounds of runs before a
	// continue-as-new are summarised by LastReport and Usage only.
	Rounds        []RoundSummary `json:"rounds"`
	RoundsOmitted int            `json:"roundsOmitted"`
	Usage         usage.Usage    `json:"usage"`
	Objective     string         `json:"objective"`
	Workspace     string         `json:"workspace"`
	// VerifyCommand is the verify command that applies ("" when none).
	VerifyCommand string `json:"verifyCommand,omitempty"`
	// StopRequested: a stop update was accepted; the run ends after the running round.
	StopRequested bool `json:"stopRequested"`
	// PauseRequested: a pause update was accepted and no resume since; the phase
	// is paused once no round runs.
	PauseRequested bool         `json:"pauseRequested"`
	Budget         BudgetStatus `json:"budget"`
	// WaitingUntil (RFC 3339) and WaitReason (rate-limited, quota or
	// unavailable) say why and how long a deferred round waits; set while
	// the phase is waiting (and while a pause holds such a wait).
	WaitingUntil string `json:"waitingUntil,omitempty"`
	WaitReason   string `json:"waitReason,omitempty"`
	// Deferrals counts the current round's consecutive deferrals.
	Deferrals int `json:"deferrals,omitempty"`
	// Candidates are the running round's candidates as they finish.
	Candidates []CandidateSummary `json:"candidates,omitempty"`
	// Guidance is the operator's guidance: pending, and the round that
	// received the last (absent before any).
	Guidance *GuidanceStatus `json:"guidance,omitempty"`
}

// Continuation is what crosses a continue-as-new: exactly the objective, the
// next round, the resolved limits, the usage totals and the last accepted
// report (plus the resolved cap and workspace the objective runs against).
type Continuation struct {
	Objective  string            `json:"objective"`
	Workspace  string            `json:"workspace"`
	MaxRounds  int               `json:"maxRounds"`
	NextRound  int               `json:"nextRound"`
	Limits     activities.Limits `json:"limits"`
	Usage      usage.Usage       `json:"usage"`
	LastReport *report.Report    `json:"lastReport"`
	// What the later features carry (absent in older histories: zero values).
	VerifyCommand string                 `json:"verifyCommand,omitempty"`
	Budget        RunBudget              `json:"budget"`
	IdleRounds    int                    `json:"idleRounds,omitempty"`
	Checkpoint    *activities.Checkpoint `json:"checkpoint,omitempty"`
	Paused        bool                   `json:"paused,omitempty"`
	// ProtectedPaths and Review are the run's own (input) settings;
	// BaseCommit is where the run's change started (git modes).
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
	Review         bool     `json:"review,omitempty"`
	BaseCommit     string   `json:"baseCommit,omitempty"`
	// FirstRequestTokens is the prompt tokens of the last round's first
	// request: the cost the token budget must still cover for a round to start.
	FirstRequestTokens int `json:"firstRequestTokens,omitempty"`
	// Deferrals and DeferredUsage are the next round's consecutive
	// deferrals and what they spent, when the run continued during its wait.
	Deferrals     int         `json:"deferrals,omitempty"`
	DeferredUsage usage.Usage `json:"deferredUsage,omitzero"`
	// Approve is the run's approval mode; Guidance what waits for the next round.
	Approve  string `json:"approve,omitempty"`
	Guidance string `json:"guidance,omitempty"`
	// Candidates is how many agents each round runs (0 or 1: one).
	Candidates int `json:"candidates,omitempty"`
	// StopRequested and StopReason are a stop accepted before the run
	// continued as new: the next run ends before its first round.
	StopRequested bool   `json:"stopRequested,omitempty"`
	StopReason    string `json:"stopReason,omitempty"`
	// CampaignObjective is a planned campaign's objective (TaskStart).
	CampaignObjective string `json:"campaignObjective,omitempty"`
}
