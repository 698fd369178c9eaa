// Package plan holds what crosses between a campaign's waves (SPEC 40): the
// plan a wave's planner submits and the wave report the campaign writes for
// the next wave's planner. They are pure values, validated here, so the
// planner's tool, the PlanWave activity, the workflow and the starter apply
// the same rules.
package plan

import "github.com/ralph-temporal/ralph/internal/tasklist"

// A plan's status (submit_plan's "status").
const (
	StatusTasks    = "tasks"
	StatusComplete = "complete"
	StatusBlocked  = "blocked"
)

// Plan is one planner's submission: tasks for this wave, or complete with
// evidence, or blocked with a blocker.
type Plan struct {
	Status   string          `json:"status"`
	Summary  string          `json:"summary"`
	Tasks    []tasklist.Task `json:"tasks,omitempty"`
	Evidence []string        `json:"evidence,omitempty"`
	Blocker  string          `json:"blocker,omitempty"`
}

// Rules are what a plan is checked against besides its own shape: the task
// ids the campaign already holds (unique across the whole campaign), those
// of them that merged (a dependency may name one), and the wave's task
// ceiling (RALPH_MAX_WAVE_TASKS).
type Rules struct {
	MaxTasks  int      `json:"maxTasks"`
	KnownIDs  []string `json:"knownIds,omitempty"`
	MergedIDs []string `json:"mergedIds,omitempty"`
	// MaxObjectiveChars bounds each task's objective (the deployment's
	// RALPH_MAX_OBJECTIVE_CHARS; 0: DefaultMaxObjectiveChars).
	MaxObjectiveChars int `json:"maxObjectiveChars,omitempty"`
}

// WaveReport is the campaign-written report of one wave: the only state
// that crosses to the next wave's planner, bounded by the handoff cap.
type WaveReport struct {
	Wave    int    `json:"wave"`
	Summary string `json:"summary"` // the wave's plan summary
	// Tasks: each of the wave's tasks, its outcome (the task's final
	// phase), merge commit or failure.
	Tasks []TaskOutcome `json:"tasks"`
	// Verify is set when the planner said complete and the verify command
	// failed on the integration head.
	Verify *HeadVerify `json:"verify,omitempty"`
	// Rejected is a person's reason for rejecting the last plan.
	Rejected string `json:"rejected,omitempty"`
	// Omitted counts the tasks Fit left out of Tasks (merged ones first)
	// when even their names passed the handoff cap.
	Omitted int `json:"omitted,omitempty"`
}

// TaskOutcome is one task of a wave as its report tells it.
type TaskOutcome struct {
	ID          string `json:"id"`
	Outcome     string `json:"outcome"`
	MergeCommit string `json:"mergeCommit,omitempty"`
	Failure     string `json:"failure,omitempty"`
}

// HeadVerify is the verify command's run on the integration head.
type HeadVerify struct {
	Command  string `json:"command"`
	Head     string `json:"head"`
	ExitCode int    `json:"exitCode"`
	// OutputTail is the end of its output (cut at the start).
	OutputTail string `json:"outputTail"`
}
