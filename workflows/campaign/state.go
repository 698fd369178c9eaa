package campaign

import (
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// campaignSettings is a campaign's validated input with every default
// resolved; it never changes after the start.
type campaignSettings struct {
	ID               string `json:"id"`
	Base             string `json:"base,omitempty"`
	Branch           string `json:"branch"`
	MaxParallel      int    `json:"maxParallel"`
	VerifyCommand    string `json:"verifyCommand"`
	MaxMergeAttempts int    `json:"maxMergeAttempts"`
	MergeBatch       int    `json:"mergeBatch"`
	Approve          string `json:"approve"`
}

// taskState is everything the campaign knows of one task; it crosses
// continue-as-new whole.
type taskState struct {
	Task          Task        `json:"task"`
	Phase         string      `json:"phase"`
	Go            int         `json:"go"`
	Round         int         `json:"round"`
	WorkflowID    string      `json:"workflowId"`
	Commit        string      `json:"commit,omitempty"` // the loop's last checkpoint, once it completed
	MergeCommit   string      `json:"mergeCommit,omitempty"`
	MergeAttempts int         `json:"mergeAttempts"`
	LastFailure   string      `json:"lastFailure,omitempty"`
	Usage         usage.Usage `json:"usage"`
	DiffStat      string      `json:"diffStat,omitempty"`
	// Held is a verified merge commit awaiting approval, HeldOn the
	// integration head it was merged onto.
	Held   string `json:"held,omitempty"`
	HeldOn string `json:"heldOn,omitempty"`
	// Back is the report the next go starts from (a returned task).
	Back *report.Report `json:"back,omitempty"`
}
