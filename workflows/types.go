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
}

// Result is the workflow's successful result.
type Result struct {
	Status        string        `json:"status"`
	RoundsStarted int           `json:"roundsStarted"`
	Report        report.Report `json:"report"`
	Usage         usage.Usage   `json:"usage"`
}

// RoundFailedDetails are the details of a RoundFailed error.
type RoundFailedDetails struct {
	FailedRound int            `json:"failedRound"`
	LastHandoff *report.Report `json:"lastHandoff"`
}

// InvalidReportDetails are the details of an InvalidReport error: the round
// whose report the workflow refused and the last accepted handoff.
type InvalidReportDetails struct {
	Round       int            `json:"round"`
	Problem     string         `json:"problem"`
	LastHandoff *report.Report `json:"lastHandoff"`
}

// RoundSummary is one finished round as the status query lists it.
type RoundSummary struct {
	Round     int    `json:"round"`
	Status    string `json:"status"`
	Summary   string `json:"summary"`
	SessionID string `json:"sessionId"`
}

// Status answers the status query.
type Status struct {
	Round      int            `json:"round"`
	MaxRounds  int            `json:"maxRounds"`
	Phase      string         `json:"phase"`
	Outcome    string         `json:"outcome,omitempty"`
	LastReport *report.Report `json:"lastReport"`
	// Rounds lists the rounds finished by this workflow run; rounds of runs
	// before a continue-as-new are summarised by LastReport and Usage only.
	Rounds    []RoundSummary `json:"rounds"`
	Usage     usage.Usage    `json:"usage"`
	Objective string         `json:"objective"`
	Workspace string         `json:"workspace"`
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
}
