package agent

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"
)

// The session's long texts (system prompt, round prompt, notices, reminders)
// are template files, one per text, so a prompt change is a text diff.
//
//go:embed prompts/*.tmpl
var promptFiles embed.FS

// promptTemplates is parsed once and only ever read.
var promptTemplates = template.Must(template.New("prompts").Option("missingkey=error").ParseFS(promptFiles, "prompts/*.tmpl"))

// Names of the template files.
const (
	textSystem          = "system.tmpl"
	textRound           = "round.tmpl"
	textReminder        = "reminder.tmpl"
	textFinalReminder   = "final_reminder.tmpl"
	textHandoff         = "handoff.tmpl"
	textCompacted       = "compacted.tmpl"
	textCutoff          = "cutoff.tmpl"
	textVerifyRefused   = "verify_refused.tmpl"
	textVerifyExhausted = "verify_exhausted.tmpl"
	textSubmitReport    = "submit_report.tmpl"
	textProtected       = "protected_refused.tmpl"
	// The independent reviewer's texts.
	textReviewSystem        = "review_system.tmpl"
	textReview              = "review.tmpl"
	textReviewReminder      = "review_reminder.tmpl"
	textReviewFinalReminder = "review_final_reminder.tmpl"
	textReviewHandoff       = "review_handoff.tmpl"
	textSubmitReview        = "submit_review.tmpl"
	// A reviewer choosing between a round's candidates.
	textChoiceSystem = "choice_system.tmpl"
	textChoice       = "choice.tmpl"
	textSubmitChoice = "submit_choice.tmpl"
	// A campaign wave's planner.
	textPlanSystem        = "plan_system.tmpl"
	textPlan              = "plan.tmpl"
	textPlanReminder      = "plan_reminder.tmpl"
	textPlanFinalReminder = "plan_final_reminder.tmpl"
	textPlanHandoff       = "plan_handoff.tmpl"
	textSubmitPlan        = "submit_plan.tmpl"
)

// render fills one text. The templates are fixed, so an error here is a
// harness bug; it is returned rather than hidden.
func render(name string, data any) (string, error) {
	var b bytes.Buffer
	if err := promptTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("render the %s text: %w", strings.TrimSuffix(name, ".tmpl"), err)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
