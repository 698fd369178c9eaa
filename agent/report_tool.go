package agent

import (
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/report"
)

// SubmitReportTool is the name of the tool through which the report arrives.
// A tool call works with providers that lack strict JSON-schema output and
// forced tool choice.
const SubmitReportTool = "submit_report"

const submitReportParameters = `{
  "type": "object",
  "properties": {
    "status": {"type": "string", "enum": ["continue", "complete", "blocked"], "description": "continue: work remains; complete: the objective is done; blocked: you cannot proceed."},
    "summary": {"type": "string", "description": "What the workspace now holds and what this round did. Non-empty, trimmed."},
    "evidence": {"type": "array", "items": {"type": "string"}, "description": "Concrete, checkable facts (commands run and their results, files). [] when none; at least one for complete."},
    "nextSteps": {"type": "array", "items": {"type": "string"}, "description": "What the next worker should do. At least one for continue; [] for complete."},
    "blocker": {"type": "string", "description": "What blocks the work; non-empty exactly when status is blocked, otherwise \"\"."}
  },
  "required": ["status", "summary", "evidence", "nextSteps", "blocker"],
  "additionalProperties": false
}`

func submitReportDefinition(maxHandoffChars int) openai.Tool {
	return openai.Tool{
		Type: openai.ToolTypeFunction,
		Function: &openai.FunctionDefinition{
			Name: SubmitReportTool,
			Description: fmt.Sprintf("End this round with the handoff report for the next fresh worker, after verifying your work. "+
				"The report is validated (rules in the system message; compact JSON at most %d characters); "+
				"an invalid report is returned with the rule it broke and you may fix it and call again.", maxHandoffChars),
			Parameters: json.RawMessage(submitReportParameters),
		},
	}
}

// checkReport decodes and validates submit_report's arguments, returning the
// exact rule a bad report broke.
func checkReport(args string, maxHandoffChars int) (report.Report, error) {
	r, err := report.Decode([]byte(args))
	if err != nil {
		return report.Report{}, err
	}
	if err := report.Validate(r, maxHandoffChars); err != nil {
		return report.Report{}, err
	}
	return r, nil
}
