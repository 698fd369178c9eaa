package agent

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/report"
)

// The round prompt holds only what SPEC section 5 lists: a fresh worker, the
// immutable objective, "Round R of N", the workspace as the source of truth,
// the previous report (or a first-round line), the report rules and the ban
// on starting another Ralph loop. Nothing else from earlier rounds enters.

const systemPromptTemplate = `You are a fresh worker in a Ralph loop: one immutable objective is handed, round after round, to a new worker. You have no earlier conversation; nothing from earlier rounds reaches you except the shared workspace and the previous worker's handoff report.

The workspace is the source of truth. Inspect it before you act, keep the existing work and build on it, do concrete work within the objective's scope, and verify what you did (for example by running the tests). Check the previous handoff against the workspace instead of trusting it. Use the tools; all paths are relative to the workspace root.

End the round by calling submit_report with your handoff report for the next worker. The session ends when a valid report is accepted. Report rules:
- exactly the keys status, summary, evidence, nextSteps, blocker; all five are required;
- status is "continue", "complete" or "blocked";
- summary, every evidence item and every nextSteps item is a non-empty string without leading or trailing whitespace; blocker has no leading or trailing whitespace and may be "";
- evidence and nextSteps are arrays, [] when empty, never null;
- continue: at least one next step and an empty blocker;
- complete: at least one evidence item, no next steps and an empty blocker;
- blocked: a non-empty blocker naming what blocks the work;
- the compact JSON of the report is at most %d characters; a longer report is rejected, never cut.
An invalid report comes back with the rule it broke, a few times at most, so you can fix it.

Do not start another Ralph loop (no Ralph workflow, starter or temporal command that starts one): do the work of this round yourself.`

const firstRoundLine = "This is the first round: there is no previous report."

func systemPrompt(maxHandoffChars int) string {
	return fmt.Sprintf(systemPromptTemplate, maxHandoffChars)
}

func userPrompt(req Request) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Round %d of %d.\n\nObjective:\n%s\n\n", req.Round, req.MaxRounds, req.Objective)
	if req.Previous == nil {
		b.WriteString(firstRoundLine)
		return b.String(), nil
	}
	prev, err := report.Indented(*req.Previous)
	if err != nil {
		return "", fmt.Errorf("render the previous report: %w", err)
	}
	fmt.Fprintf(&b, "Previous worker's handoff report (check it against the workspace):\n%s", prev)
	return b.String(), nil
}

func initialMessages(req Request) ([]openai.ChatCompletionMessage, error) {
	user, err := userPrompt(req)
	if err != nil {
		return nil, err
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: systemPrompt(req.handoffCap())},
		{Role: openai.ChatMessageRoleUser, Content: user},
	}, nil
}

// Notices appended as user messages; earlier messages are never rewritten.
const (
	reminderNotice = "You answered without calling a tool. This round ends only when submit_report accepts a valid handoff report. " +
		"Keep working with the tools, or call submit_report now."
	finalReminderNotice = "You answered without calling a tool again. Only submit_report is available now: call it with your handoff report " +
		"(status continue with next steps if work remains, blocked with a blocker if you cannot proceed)."
	lastCallNotice = "This is the last model call of this round: only submit_report is available now. Call it with your handoff report " +
		"(status continue with next steps if work remains)."
	// emptyAnswerText stands in for an answer with neither text nor tool
	// calls, so the echoed assistant turn is never empty.
	emptyAnswerText = "(empty answer)"
)
