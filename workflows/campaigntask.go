package workflows

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/report"
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
