package activities_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// The round output names the run budget that forced the session's hand-off,
// so the workflow can end the run with that limit.
func TestRunRoundNamesTheBudgetThatForcedTheHandoff(t *testing.T) {
	handoff := fakeopenai.ReportArgs{Status: "continue", Summary: "Out of budget.", NextSteps: []string{"Go on."}}
	script := fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		resp := fakeopenai.Tools(fakeopenai.CallJSON("list_files", map[string]string{"path": "."}))
		if len(r.Chat.Tools) == 1 { // only submit_report is offered: the hand-off
			resp = fakeopenai.Tools(fakeopenai.SubmitReport(handoff))
		}
		resp.Usage = &openai.Usage{PromptTokens: 3000, CompletionTokens: 10}
		return resp
	}}
	for _, tc := range []struct {
		budget int
		want   string
	}{{9000, report.LimitTokens}, {0, ""}} {
		f := newFixture(t, script, context.Background(), func(c *activities.Config) { c.Agent.MaxModelCalls = 4 })
		in := roundInput("budget")
		in.TokenBudget = tc.budget
		out, err := f.run(in)
		if err != nil || out.Report.Status != report.StatusContinue || out.BudgetForced != tc.want {
			t.Fatalf("token budget %d: output %+v, %v; want a hand-off forced by %q", tc.budget, out, err, tc.want)
		}
	}
}
