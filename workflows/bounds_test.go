package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
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
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).After(time.Second).Return(
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
		acks = append(acks, sendUpdate(env, time.Duration(i)*time.Second+250*time.Millisecond, name))
	}
	// Rounds take a second; after 70 s more than 50 have finished.
	desc := sendUpdate(env, 70*time.Second, UpdateDescribe)
	objective := strings.Repeat(fourBytes, MaxObjectiveBytes/4)
	input, _ := json.Marshal(map[string]any{"objective": objective, "protectedPaths": protected, "verifyCommand": limits.VerifyCommand})
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(input), (*Continuation)(nil))
	for _, a := range acks {
		if a.rejected != nil || !a.done {
			t.Fatalf("update: %+v", a)
		}
		note("update result", a.ack)
	}
	if len(desc.status.Rounds) != MaxStatusRounds {
		t.Fatalf("describe shows %d rounds", len(desc.status.Rounds))
	}
	note("describe result", desc.status)
	st := queryStatus(t, env)
	if data, _ := json.Marshal(st); len(data) > 2*mib || testing.Verbose() {
		t.Logf("status query: %d bytes", len(data))
		if len(data) > 2*mib {
			t.Errorf("the status query's answer is %d bytes, over 2 MiB", len(data))
		}
	}
	var cont *workflow.ContinueAsNewError
	if !errors.As(env.GetWorkflowError(), &cont) {
		t.Fatalf("the run did not continue as new: %v", env.GetWorkflowError())
	}
	for _, p := range cont.Input.GetPayloads() {
		largest["continuation"] = max(largest["continuation"], len(p.GetData()))
	}
	if len(largest) != 5 || len(st.Rounds) != MaxStatusRounds || st.RoundsOmitted != 10 || largest["update result"] > 200 {
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
	got := cutText(long, MaxStatusSummaryChars)
	want := strings.Repeat(fourBytes, MaxStatusSummaryChars) + " [cut at 500 of 507 characters]"
	if got != want || cutText("short", 5) != "short" || utf8.RuneCountInString(cutText(long[:MaxStatusSummaryChars*4], MaxStatusSummaryChars)) != MaxStatusSummaryChars {
		t.Fatalf("cutText = %q", got)
	}
	paths := boundedPaths([]string{"a", "b", strings.Repeat("c", 130), "d", "e"})
	if want := []string{"a", "b", strings.Repeat("c", 128) + " [cut at 128 of 130 characters]", "... and 2 more"}; !slices.Equal(paths, want) {
		t.Fatalf("boundedPaths = %q", paths)
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
