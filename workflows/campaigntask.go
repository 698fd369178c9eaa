package workflows

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// What a Ralph run shares with the Campaign workflow (package
// workflows/campaign) that may start it: the names both answer to and the
// start argument a campaign passes its task loops.

// SignalStop asks a task's loop to stop as the stop update does (a
// campaign cannot send updates to its children).
const SignalStop = "stop"

// Names of the approval updates, shared by a run's and a campaign's waits.
const (
	UpdateApprove = "approve"
	UpdateReject  = "reject"
)

// SearchAttrCampaign (Keyword) names the campaign on the campaign itself and
// on every task run it starts.
const SearchAttrCampaign = "RalphCampaign"

// TaskStart is what a Campaign passes to a task's Ralph run beside its
// input: the campaign it belongs to, on a later go the report the campaign
// wrote naming what failed, and for a planned campaign (SPEC 40) the
// campaign's objective, shown in every round's prompt as context beside the
// task's own. Only a parent workflow may pass it.
type TaskStart struct {
	Campaign          string         `json:"campaign"`
	PreviousReport    *report.Report `json:"previousReport,omitempty"`
	CampaignObjective string         `json:"campaignObjective,omitempty"`
	// ReportEnd: the loop tells the campaign (Campaign, its workflow id)
	// how it ended, whichever way, with SignalTaskEnded naming Task and Go
	// (SPEC 39, loops outlive a run); only a campaign that no longer drains
	// its loops at continue-as-new sets it.
	ReportEnd bool   `json:"reportEnd,omitempty"`
	Task      string `json:"task,omitempty"`
	Go        int    `json:"go,omitempty"`
}

// TaskReportTo is where a campaign's task loop reports its end: carried
// across the loop's own continue-as-new.
type TaskReportTo struct {
	Campaign string `json:"campaign"`
	Task     string `json:"task"`
	Go       int    `json:"go"`
}

// SignalTaskEnded is the signal a campaign's task loop sends its campaign
// (by workflow id: whichever run of it is current) when it ends.
const SignalTaskEnded = "task-ended"

// MaxTaskEndedChars cuts a TaskEnded's Blocker and Failure: the signal
// stays small (12,467 bytes at most, every character JSON-escaped:
// TestTaskEndedStaysSmall).
const MaxTaskEndedChars = 2000

// TaskEnded is SignalTaskEnded's payload: what the campaign needs of a
// loop's end. Status is the result's (complete, blocked, stopped,
// budget-limited) or, for a loop that ended in an error, failed or
// cancelled with Failure the error; Usage is the whole run's (a failure's
// as RunUsageOf reads it, else FailedUsage).
type TaskEnded struct {
	Task       string      `json:"task"`
	Go         int         `json:"go"`
	WorkflowID string      `json:"workflowId"`
	Status     string      `json:"status"`
	Commit     string      `json:"commit,omitempty"`
	Rounds     int         `json:"rounds"`
	Usage      usage.Usage `json:"usage"`
	Limit      string      `json:"limit,omitempty"`
	// Blocker is the last report's blocker (else its summary); Failure the
	// error a failed or cancelled loop ended with.
	Blocker string `json:"blocker,omitempty"`
	Failure string `json:"failure,omitempty"`
}

// fieldApprove and ApproveNone are the input field and mode a run shares
// with a campaign (whose approve is none or merge).
const (
	fieldApprove = "approve"
	ApproveNone  = "none"
)

// takeCampaignObjective keeps a planned campaign's objective for every
// round's prompt, bounded as an objective is.
func (l *loop) takeCampaignObjective(objective string) error {
	objective = strings.TrimSpace(objective)
	if n := utf8.RuneCountInString(objective); n > l.limits.MaxObjectiveChars {
		return invalidInput(fmt.Sprintf("task start: the campaign's objective is %d characters, over the limit of %d", n, l.limits.MaxObjectiveChars))
	}
	l.campaignObjective = objective
	return nil
}
