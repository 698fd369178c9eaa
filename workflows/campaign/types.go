package campaign

import (
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
	fieldApprove          = "approve"
	fieldID               = "id"
	fieldDependsOn        = "dependsOn"
)

// Campaign defaults (docs/campaigns.md).
const (
	DefaultCampaignParallel   = 2
	DefaultMaxMergeAttempts   = 3
	DefaultMergeBatch         = 1
	ApproveNone               = "none"
	ApproveMerge              = "merge"
	campaignWorkspacePrefix   = "campaigns/"
	campaignIntegrationSuffix = "/integration"
)

// CampaignInput is what a caller may send to start a Campaign.
type CampaignInput struct {
	Tasks            []Task `json:"tasks,omitempty"`
	TasksFile        string `json:"tasksFile,omitempty"`
	Base             string `json:"base,omitempty"`
	Branch           string `json:"branch,omitempty"`
	MaxParallel      *int   `json:"maxParallel,omitempty"`
	VerifyCommand    string `json:"verifyCommand,omitempty"`
	MaxMergeAttempts *int   `json:"maxMergeAttempts,omitempty"`
	MergeBatch       *int   `json:"mergeBatch,omitempty"`
	Approve          string `json:"approve,omitempty"`
	MaxTokens        *int   `json:"maxTokens,omitempty"`
	MaxMinutes       *int   `json:"maxMinutes,omitempty"`
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

// TaskRequest names one task (approve).
type TaskRequest struct {
	Task string `json:"task"`
}

// RejectRequest sends a task waiting for approval back with a reason.
type RejectRequest struct {
	Task   string `json:"task"`
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
	Phase string `json:"phase"` // running, paused, finished
	// PauseReason says why the merge queue paused itself ("" for an
	// operator's pause): git (a git step kept failing for a reason that is
	// not a task's) or head-red (the integration head fails the verify
	// command on its own); PauseOutput says more: the step's error, or the
	// head's verify output (its last 2,000 characters).
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
	Outcome       string                 `json:"outcome"`
	StopRequested bool                   `json:"stopRequested"`
	Verifies      []MergeVerify          `json:"verifies"`
	VerifyCount   int                    `json:"verifyCount"`
	VerifyFailed  int                    `json:"verifyFailed"`
	Budget        workflows.BudgetStatus `json:"budget"`
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
// checked, the merged tip and how the verify command ended.
type MergeVerify struct {
	Tasks    []string `json:"tasks"`
	Commit   string   `json:"commit"`
	ExitCode int      `json:"exitCode"`
	Passed   bool     `json:"passed"`
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
}
