package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

const (
	mib       = 1 << 20
	fourBytes = "𝄞" // U+1D11E: four bytes of UTF-8, raw in JSON
)

// fullReport is a continue report of exactly maxChars code points of
// compact JSON, almost all of it 4-byte characters.
func fullReport(t *testing.T, maxChars int) report.Report {
	r := report.Report{Status: report.StatusContinue, Evidence: []string{}, NextSteps: []string{"go on"}, Summary: "x"}
	base, err := report.Size(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Summary = strings.Repeat(fourBytes, maxChars-base) + "x"
	if err := report.Validate(r, maxChars); err != nil {
		t.Fatalf("the full report is invalid: %v", err)
	}
	return r
}

// The worst case of docs/reference.md ("Small history"): the deployment
// limits at their ceilings, an objective at its bound, every report at the
// handoff ceiling, 4-byte characters throughout, a full run of rounds,
// pauses and resumes. No payload the workflow writes to history (round
// inputs and outputs, update results, the continuation) passes 1 MiB; the
// status query's answer (not in history; gRPC's limit is 4 MiB) stays
// under 2 MiB.
func TestNoHistoryPayloadPassesOneMiBAtTheCeilings(t *testing.T) {
	limits := testLimits()
	// 60 rounds per run (the ceiling is 100) are enough to fill the
	// status's 50 rounds; no payload grows with the rounds of a run.
	limits.MaxRounds, limits.RoundsPerRun, limits.MaxHandoffChars, limits.MaxObjectiveChars = 256, 60, 65536, 262144
	limits.VerifyCommand = strings.Repeat(fourBytes, MaxVerifyCommandChars)
	full := fullReport(t, limits.MaxHandoffChars)
	var protected []string
	for range 64 {
		protected = append(protected, strings.Repeat(fourBytes, 256))
	}
	limits.ProtectedPaths = protected

	largest := map[string]int{}
	note := func(what string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		largest[what] = max(largest[what], len(data))
	}
	env := newEnv(t, limits, &script{})
	out := activities.RoundOutput{Report: full, SessionID: strings.Repeat("s", 64), WorkspaceChanged: true,
		Usage: usage.Usage{ModelCalls: 1, PromptTokens: 10}, Model: "primary", Restored: protected}
	note("round output", out)
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
			note("round input", in)
			return out, nil
		})
	var acks []*updateResult
	for i := range 40 {
		name := UpdatePause
		if i%2 == 1 {
			name = UpdateResume
		}
		acks = append(acks, sendUpdate(env, 0, name))
	}
	objective := strings.Repeat(fourBytes, MaxObjectiveBytes/4)
	input, _ := json.Marshal(map[string]any{"objective": objective, "protectedPaths": protected, "verifyCommand": limits.VerifyCommand})
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(input), (*Continuation)(nil))
	for _, a := range acks {
		note("update result", a.ack)
	}
	st := queryStatus(t, env)
	if data, _ := json.Marshal(st); len(data) > 2*mib {
		t.Errorf("the status query's answer is %d bytes, over 2 MiB", len(data))
	}
	var cont *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &cont) {
		t.Fatalf("the run did not continue as new: %v", env.GetWorkflowError())
	}
	for _, p := range cont.Input.GetPayloads() {
		largest["continuation"] = max(largest["continuation"], len(p.GetData()))
	}
	if len(largest) != 4 || len(st.Rounds) != MaxStatusRounds || st.RoundsOmitted != 10 || largest["update result"] > 200 {
		t.Fatalf("measured %v; status shows %d rounds, %d omitted", largest, len(st.Rounds), st.RoundsOmitted)
	}
	for what, n := range largest {
		t.Logf("largest %s: %d bytes", what, n)
		if n > mib {
			t.Errorf("the largest %s is %d bytes, over 1 MiB", what, n)
		}
	}
}

func TestStatusSummariesAreCutAndMarked(t *testing.T) {
	long := strings.Repeat(fourBytes, MaxStatusSummaryChars+7)
	got := cutSummary(long)
	want := strings.Repeat(fourBytes, MaxStatusSummaryChars) + " [cut at 500 of 507 characters]"
	if got != want || cutSummary("short") != "short" || utf8.RuneCountInString(cutSummary(long[:MaxStatusSummaryChars*4])) != MaxStatusSummaryChars {
		t.Fatalf("cutSummary = %q", got)
	}
}

func TestObjectiveOverTheByteBoundIsRefused(t *testing.T) {
	limits := testLimits()
	limits.MaxObjectiveChars = 262144
	env := newEnv(t, limits, &script{})
	input, _ := json.Marshal(map[string]string{"objective": strings.Repeat(fourBytes, MaxObjectiveBytes/4+1)})
	_, err := execute(t, env, string(input))
	if appErr := applicationError(t, err, ErrTypeInvalidInput); !strings.Contains(appErr.Error(), "objective: is 524292 bytes as JSON, over the limit of 524288") {
		t.Fatalf("error = %v", appErr)
	}
}
