package campaign

import (
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/tasklist"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// CampaignWorkflowName is the Campaign workflow's registered type: many Ralph
// loops over one task list, merged one at a time into an integration branch.
const CampaignWorkflowName = "Campaign"

// Names of the Campaign's query and updates (status is shared with Ralph).
const (
	UpdateAddTasks = "add-tasks"
)

// Campaign input field names: the only keys a caller may send.
const (
	fieldTasks            = "tasks"
	fieldTasksFile        = "tasksFile"
	fieldBase             = "base"
	fieldBranch           = "branch"
	fieldMaxParallel      = "maxParallel"
	fieldMaxMergeAttempts = "maxMergeAttempts"
	fieldMergeBatch       = "mergeBatch"
	fieldMergeLanes       = "mergeLanes"
	fieldApprove          = "approve"
	fieldID               = "id"
	fieldDependsOn        = "dependsOn"
)

// Campaign defaults (docs/campaigns.md).
const (
	DefaultCampaignParallel   = 2
	DefaultMaxMergeAttempts   = 3
	DefaultMergeBatch         = 1
	DefaultMergeLanes         = 1
	ApproveNone               = "none"
	ApproveMerge              = "merge"
	campaignWorkspacePrefix   = "campaigns/"
	campaignIntegrationSuffix = "/integration"
)

// CampaignInput is what a caller may send to start a Campaign.
type CampaignInput struct {
	// Objective, instead of tasks, has planners split it into waves of
	// tasks (SPEC 40), at most MaxWaves.
	Objective        string `json:"objective,omitempty"`
	MaxWaves         *int   `json:"maxWaves,omitempty"`
	Tasks            []Task `json:"tasks,omitempty"`
	TasksFile        string `json:"tasksFile,omitempty"`
	Base             string `json:"base,omitempty"`
	Branch           string `json:"branch,omitempty"`
	MaxParallel      *int   `json:"maxParallel,omitempty"`
	VerifyCommand    string `json:"verifyCommand,omitempty"`
	MaxMergeAttempts *int   `json:"maxMergeAttempts,omitempty"`
	MergeBatch       *int   `json:"mergeBatch,omitempty"`
	// MergeLanes is how many prefixes of the merge queue are verified at
	// once (speculative lanes; ceiling RALPH_MAX_MERGE_LANES).
	MergeLanes *int   `json:"mergeLanes,omitempty"`
	Approve    string `json:"approve,omitempty"`
	MaxTokens  *int   `json:"maxTokens,omitempty"`
	MaxMinutes *int   `json:"maxMinutes,omitempty"`
	// ProtectedPaths no task's loop may change and no merge may carry a
	// change to (each task may add its own).
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
}

// Task is one entry of a campaign's task list (internal/tasklist, which
// the starter and the ReadTasks activity read task files with).
type Task = tasklist.Task

// AddTasksRequest is the add-tasks update's argument.
type AddTasksRequest struct {
	Tasks     []Task `json:"tasks,omitempty"`
	TasksFile string `json:"tasksFile,omitempty"`
}

// TaskRequest names one task (approve). With no task it answers a wave's
// plan awaiting approval: {} runs it, {"tasks": [...]} runs that list
// instead (validated as a plan is).
type TaskRequest struct {
	Task  string `json:"task,omitempty"`
	Tasks []Task `json:"tasks,omitempty"`
}

// RejectRequest sends a task waiting for approval back with a reason; with
// no task it rejects a wave's plan (a new planning round, the reason as
// guidance).
type RejectRequest struct {
	Task   string `json:"task,omitempty"`
	Reason string `json:"reason"`
}

// Task phases of a campaign's status and result.
const (
	TaskWaiting          = "waiting"
	TaskRunning          = "running"
	TaskQueued           = "queued"
	TaskMerging          = "merging"
	TaskAwaitingApproval = "awaiting-approval"
	TaskMerged           = "merged"
	TaskReturned         = "returned"
	TaskBlocked          = "blocked"
	TaskFailed           = "failed"
	TaskCancelled        = "cancelled"
)

// Campaign result statuses.
const (
	CampaignComplete      = "complete"
	CampaignPartial       = "partial"
	CampaignStopped       = "stopped"
	CampaignBudgetLimited = "budget-limited"
	CampaignBlocked       = "blocked" // a wave's planner reported blocked
)

// TaskStatus is one task in the campaign's status query.
type TaskStatus struct {
	ID            string      `json:"id"`
	Phase         string      `json:"phase"`
	Go            int         `json:"go"`
	Round         int         `json:"round"`
	WorkflowID    string      `json:"workflowId"`
	Branch        string      `json:"branch"`
	MergeCommit   string      `json:"mergeCommit"`
	MergeAttempts int         `json:"mergeAttempts"`
	LastFailure   string      `json:"lastFailure"`
	Usage         usage.Usage `json:"usage"`
	// DependsOn and Objective say what the task is; DiffStat is the merge's
	// diff stat while it awaits approval.
	DependsOn []string `json:"dependsOn"`
	Objective string   `json:"objective"`
	DiffStat  string   `json:"diffStat,omitempty"`
}

// CampaignStatus is the Campaign's status query answer: a summary within
// 64 KiB whatever the campaign's size. Counts holds every phase's count;
// Tasks lists the running, queued, merging, awaiting and failing tasks (at
// most 100, those first in the task list), Unlisted counts the rest of
// them. The tasks query pages the whole list, the task query answers one.
type CampaignStatus struct {
	Phase string `json:"phase"` // running, paused, awaiting-plan-approval, finished
	// PauseReason says why the campaign is paused: operator (the pause
	// update), or why the merge queue paused itself: git (a git step kept
	// failing for a reason that is not a task's) or head-red (the
	// integration head fails the verify command on its own); PauseOutput
	// says more: the step's error, or the head's verify output (its last
	// 2,000 characters).
	PauseReason       string         `json:"pauseReason,omitempty"`
	PauseOutput       string         `json:"pauseOutput,omitempty"`
	Counts            map[string]int `json:"counts"`
	Total             int            `json:"total"`
	Tasks             []TaskStatus   `json:"tasks"`
	Unlisted          int            `json:"unlisted"`
	Merged            int            `json:"merged"`
	IntegrationBranch string         `json:"integrationBranch"`
	Head              string         `json:"head"`
	Usage             usage.Usage    `json:"usage"`
	// Outcome is the result status once finished; StopRequested says a stop
	// is draining the running loops; Verifies are the merge queue's last
	// verifies (a bisection's halves included), newest last, VerifyCount
	// and VerifyFailed count them all.
	Outcome       string        `json:"outcome"`
	StopRequested bool          `json:"stopRequested"`
	Verifies      []MergeVerify `json:"verifies"`
	VerifyCount   int           `json:"verifyCount"`
	VerifyFailed  int           `json:"verifyFailed"`
	// VerifyDiscarded counts the lanes' verifies thrown away (in neither
	// count above); Lanes are the speculative lanes in flight, front first.
	VerifyDiscarded int                    `json:"verifyDiscarded,omitempty"`
	Lanes           []LaneStatus           `json:"lanes,omitempty"`
	Budget          workflows.BudgetStatus `json:"budget"`
	// Wave, Waves, Plan and PlannerUsage: a planning campaign's waves
	// (waves.go).
	WaveStatus
}

// Queries of the Campaign besides status.
const (
	QueryTasks = "tasks"
	QueryTask  = "task"
)

// TasksRequest pages the task list: tasks after the id After (in list
// order), of Phase when set, at most Limit (default and ceiling 500).
type TasksRequest struct {
	Phase string `json:"phase,omitempty"`
	After string `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// TasksPage is a page of the task list; Next, when set, is the After of
// the next page.
type TasksPage struct {
	Tasks []TaskStatus `json:"tasks"`
	Next  string       `json:"next,omitempty"`
}

// TaskQuery names one task.
type TaskQuery struct {
	ID string `json:"id"`
}

// TaskDetail is one task in full, with its goes.
type TaskDetail struct {
	TaskStatus
	VerifyCommand  string   `json:"verifyCommand,omitempty"`
	MaxRounds      *int     `json:"maxRounds,omitempty"`
	ProtectedPaths []string `json:"protectedPaths"`
	TasksFile      string   `json:"tasksFile,omitempty"`
	Goes           []GoInfo `json:"goes"`
}

// GoInfo is one go of a task: its loop's workflow id.
type GoInfo struct {
	Go         int    `json:"go"`
	WorkflowID string `json:"workflowId"`
}

// MergeVerify is one verify of the merge queue: the tasks of the stack it
// checked, the merged tip and how the verify command ended; when its merge
// step started and how long it took, as the campaign saw it
// (CampaignVerifyTimes). With
// mergeLanes above 1, Lane numbers the lane (the campaign's count) and
// Discarded says why a lane's verify was thrown away (a lane before it
// failed, the head moved); a discarded verify may not have ended.
type MergeVerify struct {
	Tasks      []string  `json:"tasks"`
	Commit     string    `json:"commit"`
	ExitCode   int       `json:"exitCode"`
	Passed     bool      `json:"passed"`
	Started    time.Time `json:"started,omitzero"`
	DurationMs int64     `json:"durationMs,omitempty"`
	Lane       int       `json:"lane,omitempty"`
	Discarded  string    `json:"discarded,omitempty"`
}

// TaskResult is one task in the campaign's result.
type TaskResult struct {
	ID          string `json:"id"`
	Phase       string `json:"phase"`
	MergeCommit string `json:"mergeCommit"`
	LastFailure string `json:"lastFailure"`
}

// CampaignResult is the Campaign's result.
type CampaignResult struct {
	Status            string       `json:"status"`
	Tasks             []TaskResult `json:"tasks"`
	IntegrationBranch string       `json:"integrationBranch"`
	Head              string       `json:"head"`
	Usage             usage.Usage  `json:"usage"`
	// Waves and Blocker: a planning campaign's waves, and the blocker its
	// last planner reported when it ended blocked.
	Waves   []WaveInfo `json:"waves,omitempty"`
	Blocker string     `json:"blocker,omitempty"`
}

// CampaignContinuation carries a campaign across continue-as-new.
type CampaignContinuation struct {
	Limits   activities.Limits   `json:"limits"`
	Settings campaignSettings    `json:"settings"`
	Tasks    []taskState         `json:"tasks"`
	Queue    []string            `json:"queue"`
	Head     string              `json:"head"`
	Usage    usage.Usage         `json:"usage"`
	Budget   workflows.RunBudget `json:"budget"`
	Paused   bool                `json:"paused"`
	Stopping bool                `json:"stopping"`
	Verifies []MergeVerify       `json:"verifies"`
	// VerifyCount and VerifyFailed count every verify; Sources are the
	// tasks files tasks were read from.
	VerifyCount  int                      `json:"verifyCount,omitempty"`
	VerifyFailed int                      `json:"verifyFailed,omitempty"`
	Sources      []activities.TasksSource `json:"sources,omitempty"`
	PauseReason  string                   `json:"pauseReason,omitempty"`
	Pauses       int                      `json:"pauses,omitempty"`
	PauseOutput  string                   `json:"pauseOutput,omitempty"`
	// LaneCount numbers the lanes (their refs), VerifyDiscarded counts the
	// discarded verifies.
	LaneCount       int        `json:"laneCount,omitempty"`
	VerifyDiscarded int        `json:"verifyDiscarded,omitempty"`
	Wave            *waveState `json:"wave,omitempty"`
}

// LaneStatus is a speculative lane in flight: its number, the tasks of the
// stack it adds to the prefix (the first maxLaneTasksListed, TaskCount in
// all), the commit it merged onto, its tip, its state (merging, verifying,
// passed, red, conflict, failed) and when its verify started.
type LaneStatus struct {
	Lane      int       `json:"lane"`
	Tasks     []string  `json:"tasks"`
	TaskCount int       `json:"taskCount"`
	Onto      string    `json:"onto"`
	Tip       string    `json:"tip"`
	State     string    `json:"state"`
	Started   time.Time `json:"started"`
}
