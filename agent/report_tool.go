package agent

import (
	"github.com/ralph-temporal/ralph/report"
)

// SubmitReportTool is the name of the tool through which the report arrives.
// A tool call works with providers that lack strict JSON-schema output and
// forced tool choice.
const SubmitReportTool = "submit_report"

// reportParams is submit_report's parameter schema as a tagged struct; the
// schema sent to the model is generated from it, and report.Decode (strict:
// the same five keys, nothing else) decodes the arguments.
type reportParams struct {
	Status    string   `json:"status" enum:"continue,complete,blocked" description:"continue: work remains; complete: the objective is done; blocked: you cannot proceed."`
	Summary   string   `json:"summary" description:"What the workspace now holds and what this round did. Non-empty, trimmed."`
	Evidence  []string `json:"evidence" description:"Concrete, checkable facts (commands run and their results, files). [] when none; at least one for complete."`
	NextSteps []string `json:"nextSteps" description:"What the next worker should do. At least one for continue; [] for complete."`
	Blocker   string   `json:"blocker" description:"What blocks the work; non-empty exactly when status is blocked, otherwise \"\"."`
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
