package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

func testLimits() activities.Limits {
	l := activities.DefaultLimits()
	l.MaxRounds = 6
	l.RoundsPerRun = 100
	l.MaxObjectiveChars = 50
	return l
}

func continueReport(round int) report.Report {
	return report.Report{Status: report.StatusContinue, Summary: fmt.Sprintf("round %d done", round),
		Evidence: []string{}, NextSteps: []string{fmt.Sprintf("step after %d", round)}, Blocker: ""}
}

func completeReport(round int) report.Report {
	return report.Report{Status: report.StatusComplete, Summary: fmt.Sprintf("finished in %d", round),
		Evidence: []string{"tests pass"}, NextSteps: []string{}, Blocker: ""}
}

func blockedReport() report.Report {
	return report.Report{Status: report.StatusBlocked, Summary: "stuck",
		Evidence: []string{}, NextSteps: []string{}, Blocker: "needs credentials"}
}

// script plays one round per call: reports[r] is round r's report; a missing
// entry means continue. failAt fails that round with the given error.
const scriptFirstRequestTokens = 50

type script struct {
	mu      sync.Mutex
	reports map[int]report.Report
	failAt  map[int]error
	// idle rounds leave the workspace unchanged; verified and commits are
	// the rounds' verification records and checkpoint commits.
	idle     map[int]bool
	verified map[int]*report.Verification
	commits  map[int]string
	inputs   []activities.RoundInput
	// deferrals are served, in order, before round R hands off; deferForever
	// defers every session of that round.
	deferrals    map[int][]activities.Deferred
	deferForever map[int]activities.Deferred
}

// deferredUsage is what one scripted deferred session spent.
var deferredUsage = usage.Usage{ModelCalls: 1, PromptTokens: 40}

func (s *script) runRound(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputs = append(s.inputs, in)
	if err, ok := s.failAt[in.Round]; ok {
		return activities.RoundOutput{}, err
	}
	if d, ok := s.deferForever[in.Round]; ok {
		return activities.RoundOutput{Deferred: &d, Usage: deferredUsage, SessionID: "deferred", Model: "primary"}, nil
	}
	if q := s.deferrals[in.Round]; len(q) > 0 {
		s.deferrals[in.Round] = q[1:]
		return activities.RoundOutput{Deferred: &q[0], Usage: deferredUsage, SessionID: "deferred", Model: "primary"}, nil
	}
	r, ok := s.reports[in.Round]
	if !ok {
		r = continueReport(in.Round)
	}
	out := activities.RoundOutput{
		Report:           r,
		Usage:            usage.Usage{ModelCalls: 2, ToolCalls: 3, PromptTokens: 100, CompletionTokens: 10},
		SessionID:        fmt.Sprintf("session-%d", in.Round),
		WorkspaceChanged: !s.idle[in.Round],
		// A round's first request costs 50 tokens (the token budget's floor).
		FirstRequestTokens: scriptFirstRequestTokens,
		Model:              "primary",
	}
	if v, ok := s.verified[in.Round]; ok {
		out.Verification = v
	}
	if c, ok := s.commits[in.Round]; ok {
		out.Checkpoint = &activities.Checkpoint{Commit: c, Parent: "p"}
	}
	return out, nil
}

type workflowSuite struct {
	testsuite.WorkflowTestSuite
}

// NewTestWorkflowEnvironment is the SDK's with a longer wall-clock wait for
// the next thing to happen: the SDK's 3 s is short for a -race run on a
// busy 2-core machine, where it panics with nothing stuck.
func (s *workflowSuite) NewTestWorkflowEnvironment() *testsuite.TestWorkflowEnvironment {
	env := s.WorkflowTestSuite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	return env
}

func newEnv(t *testing.T, limits activities.Limits, s *script) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite workflowSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Ralph, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context) (activities.Limits, error) { return limits, nil },
		activity.RegisterOptions{Name: activities.ResolveLimitsName})
	env.RegisterActivityWithOptions(s.runRound, activity.RegisterOptions{Name: activities.RunRoundName})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "fix-tests"})
	return env
}

func execute(t *testing.T, env *testsuite.TestWorkflowEnvironment, input string) (*Result, error) {
	t.Helper()
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(input), (*Continuation)(nil))
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		return nil, err
	}
	var res Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	return &res, nil
}

func queryStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) Status {
	t.Helper()
	v, err := env.QueryWorkflow(StatusQueryName)
	if err != nil {
		t.Fatalf("query status: %v", err)
	}
	var st Status
	if err := v.Get(&st); err != nil {
		t.Fatalf("decode status: %v", err)
	}
	return st
}

func TestOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		reports    map[int]report.Report
		input      string
		wantStatus string
		wantRounds int
		wantCap    int
	}{
		{"complete in round 2", map[int]report.Report{2: completeReport(2)}, `{"objective":"fix it"}`, report.OutcomeComplete, 2, 6},
		{"blocked in round 1", map[int]report.Report{1: blockedReport()}, `{"objective":"fix it","maxRounds":2}`, report.OutcomeBlocked, 1, 2},
		{"budget-limited at the cap", nil, `{"objective":"fix it","maxRounds":3}`, report.OutcomeBudgetLimited, 3, 3},
		{"default cap is the ceiling", nil, `{"objective":"fix it"}`, report.OutcomeBudgetLimited, 6, 6},
		{"null maxRounds is the ceiling", nil, `{"objective":"fix it","maxRounds":null}`, report.OutcomeBudgetLimited, 6, 6},
		{"cap equal to the ceiling", nil, `{"objective":"fix it","maxRounds":6}`, report.OutcomeBudgetLimited, 6, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{reports: tt.reports}
			env := newEnv(t, testLimits(), s)
			res, err := execute(t, env, tt.input)
			if err != nil {
				t.Fatalf("workflow failed: %v", err)
			}
			if res.Status != tt.wantStatus || res.RoundsStarted != tt.wantRounds {
				t.Fatalf("result = %s after %d rounds, want %s after %d", res.Status, res.RoundsStarted, tt.wantStatus, tt.wantRounds)
			}
			if len(s.inputs) != tt.wantRounds {
				t.Fatalf("ran %d rounds, want %d", len(s.inputs), tt.wantRounds)
			}
			for _, in := range s.inputs {
				if in.MaxRounds != tt.wantCap {
					t.Fatalf("round %d saw cap %d, want %d", in.Round, in.MaxRounds, tt.wantCap)
				}
			}
			want := usage.Usage{ModelCalls: 2 * tt.wantRounds, ToolCalls: 3 * tt.wantRounds, PromptTokens: 100 * tt.wantRounds, CompletionTokens: 10 * tt.wantRounds}
			if res.Usage != want {
				t.Fatalf("usage = %+v, want %+v", res.Usage, want)
			}
			if res.Report.Status != map[string]string{
				report.OutcomeComplete: report.StatusComplete, report.OutcomeBlocked: report.StatusBlocked,
				report.OutcomeBudgetLimited: report.StatusContinue,
			}[tt.wantStatus] {
				t.Fatalf("final report status %q for outcome %q", res.Report.Status, tt.wantStatus)
			}
			st := queryStatus(t, env)
			if st.Phase != PhaseFinished || st.Round != tt.wantRounds || len(st.Rounds) != tt.wantRounds || st.Usage != want {
				t.Fatalf("status after the run = %+v", st)
			}
		})
	}
}

func TestPreviousReportReachesOnlyTheNextRound(t *testing.T) {
	s := &script{reports: map[int]report.Report{4: completeReport(4)}}
	env := newEnv(t, testLimits(), s)
	if _, err := execute(t, env, `{"objective":"fix it","maxRounds":5}`); err != nil {
		t.Fatal(err)
	}
	if len(s.inputs) != 4 {
		t.Fatalf("ran %d rounds", len(s.inputs))
	}
	if s.inputs[0].Previous != nil {
		t.Fatalf("round 1 got a previous report: %+v", s.inputs[0].Previous)
	}
	for i, in := range s.inputs {
		if in.Round != i+1 || in.MaxRounds != 5 || in.Objective != "fix it" || in.Workspace != "fix-tests" {
			t.Fatalf("round input %d = %+v", i, in)
		}
		if i == 0 {
			continue
		}
		if in.Previous == nil || in.Previous.Summary != fmt.Sprintf("round %d done", i) {
			t.Fatalf("round %d got previous %+v, want round %d's report", in.Round, in.Previous, i)
		}
	}
}

func applicationError(t *testing.T, err error, wantType string) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		t.Fatalf("error = %v, want an ApplicationError", err)
	}
	if appErr.Type() != wantType {
		t.Fatalf("error type = %q (%v), want %q", appErr.Type(), err, wantType)
	}
	return appErr
}

func TestInputErrors(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		wantField string
	}{
		{"no input", ``, "input"},
		{"null input", `null`, "input"},
		{"array input", `[1]`, "input"},
		{"unknown field", `{"objective":"x","model":"gpt"}`, "model"},
		{"missing objective", `{"maxRounds":2}`, "objective"},
		{"null objective", `{"objective":null}`, "objective"},
		{"blank objective", `{"objective":"  \n"}`, "objective"},
		{"objective not a string", `{"objective":42}`, "objective"},
		{"objective over the cap", `{"objective":"` + strings.Repeat("ü", 51) + `"}`, "objective"},
		{"maxRounds float", `{"objective":"x","maxRounds":2.0}`, "maxRounds"},
		{"maxRounds exponent", `{"objective":"x","maxRounds":1e1}`, "maxRounds"},
		{"maxRounds string", `{"objective":"x","maxRounds":"3"}`, "maxRounds"},
		{"maxRounds zero", `{"objective":"x","maxRounds":0}`, "maxRounds"},
		{"maxRounds negative", `{"objective":"x","maxRounds":-1}`, "maxRounds"},
		{"maxRounds over the ceiling", `{"objective":"x","maxRounds":7}`, "maxRounds"},
		{"maxRounds huge", `{"objective":"x","maxRounds":99999999999999999999}`, "maxRounds"},
		{"workspace absolute", `{"objective":"x","workspace":"/etc"}`, "workspace"},
		{"workspace escapes", `{"objective":"x","workspace":"a/../../b"}`, "workspace"},
		{"workspace dotdot", `{"objective":"x","workspace":".."}`, "workspace"},
		{"workspace unclean", `{"objective":"x","workspace":"a//b"}`, "workspace"},
		{"workspace empty", `{"objective":"x","workspace":""}`, "workspace"},
		{"workspace is the root", `{"objective":"x","workspace":"."}`, "workspace"},
		{"workspace not a string", `{"objective":"x","workspace":7}`, "workspace"},
		{"workspace element too long", `{"objective":"x","workspace":"a/` + strings.Repeat("n", 256) + `"}`, "workspace"},
		{"workspace too long", `{"objective":"x","workspace":"` + strings.Repeat("abcdefgh/", 114) + `x"}`, "workspace"},
		{"verifyCommand blank", `{"objective":"x","verifyCommand":"  "}`, "verifyCommand"},
		{"verifyCommand not a string", `{"objective":"x","verifyCommand":["go","test"]}`, "verifyCommand"},
		{"verifyCommand over the cap", `{"objective":"x","verifyCommand":"` + strings.Repeat("é", 4097) + `"}`, "verifyCommand"},
		{"maxTokens float", `{"objective":"x","maxTokens":1.5}`, "maxTokens"},
		{"maxTokens zero", `{"objective":"x","maxTokens":0}`, "maxTokens"},
		{"maxTokens string", `{"objective":"x","maxTokens":"100"}`, "maxTokens"},
		{"maxMinutes negative", `{"objective":"x","maxMinutes":-5}`, "maxMinutes"},
		{"maxMinutes float", `{"objective":"x","maxMinutes":2.5}`, "maxMinutes"},
		{"protectedPaths not an array", `{"objective":"x","protectedPaths":"tests/**"}`, "protectedPaths"},
		{"protectedPaths too many", `{"objective":"x","protectedPaths":[` + strings.TrimSuffix(strings.Repeat(`"a",`, 65), ",") + `]}`, "protectedPaths"},
		{"protectedPaths empty pattern", `{"objective":"x","protectedPaths":["tests/**",""]}`, "protectedPaths[1]"},
		{"protectedPaths untrimmed", `{"objective":"x","protectedPaths":[" tests/**"]}`, "protectedPaths[0]"},
		{"protectedPaths too long", `{"objective":"x","protectedPaths":["` + strings.Repeat("é", 257) + `"]}`, "protectedPaths[0]"},
		{"protectedPaths not a string", `{"objective":"x","protectedPaths":[7]}`, "protectedPaths[0]"},
		{"protectedPaths null item", `{"objective":"x","protectedPaths":[null]}`, "protectedPaths[0]"},
		{"protectedPaths bad glob", `{"objective":"x","protectedPaths":["[z-a"]}`, "protectedPaths[0]"},
		{"review string", `{"objective":"x","review":"on"}`, "review"},
		{"review number", `{"objective":"x","review":1}`, "review"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{}
			env := newEnv(t, testLimits(), s)
			var err error
			if tt.input == "" {
				env.ExecuteWorkflow(WorkflowName)
				err = env.GetWorkflowError()
			} else {
				_, err = execute(t, env, tt.input)
			}
			appErr := applicationError(t, err, ErrTypeInvalidInput)
			if !strings.Contains(appErr.Error(), tt.wantField+":") {
				t.Fatalf("error %q does not name the field %q", appErr.Error(), tt.wantField)
			}
			if !appErr.NonRetryable() {
				t.Fatal("InvalidInput is retryable")
			}
			if len(s.inputs) != 0 {
				t.Fatalf("a round ran on bad input")
			}
		})
	}
}

func TestObjectiveIsTrimmedAndCountedInCodePoints(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	env := newEnv(t, testLimits(), s)
	objective := strings.Repeat("ü", 50)
	if _, err := execute(t, env, `{"objective":"  `+objective+`\n","workspace":"team/repo"}`); err != nil {
		t.Fatalf("objective of exactly the cap rejected: %v", err)
	}
	if s.inputs[0].Objective != objective || s.inputs[0].Workspace != "team/repo" {
		t.Fatalf("round input = %+v", s.inputs[0])
	}
}

func TestDefaultWorkspaceIsPathSafe(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := map[string]string{"fix-tests": "fix-tests", "a/b c": "a-b-c", "../x": "-x", "...": "run", "ü": "-",
		long: DefaultWorkspace(long)}
	if got := DefaultWorkspace(long); len(got) > names.MaxNameBytes || got == DefaultWorkspace(long+"y") {
		t.Errorf("a long workflow id gives %q (%d bytes): want a shortened, distinct name", got, len(got))
	}
	for id, want := range tests {
		if got := DefaultWorkspace(id); got != want {
			t.Errorf("DefaultWorkspace(%q) = %q, want %q", id, got, want)
		}
		if err := CheckWorkspace(DefaultWorkspace(id)); err != nil {
			t.Errorf("DefaultWorkspace(%q) is not a valid workspace: %v", id, err)
		}
	}
}

func TestRoundFailed(t *testing.T) {
	childFailure := temporal.NewNonRetryableApplicationError("model said 401", activities.ErrTypeChildFailed, nil)
	for _, failedRound := range []int{1, 3} {
		t.Run(fmt.Sprintf("round %d", failedRound), func(t *testing.T) {
			s := &script{failAt: map[int]error{failedRound: childFailure}}
			env := newEnv(t, testLimits(), s)
			_, err := execute(t, env, `{"objective":"fix it"}`)
			appErr := applicationError(t, err, ErrTypeRoundFailed)
			var details RoundFailedDetails
			if err := appErr.Details(&details); err != nil {
				t.Fatalf("decode details: %v", err)
			}
			if details.FailedRound != failedRound {
				t.Fatalf("failedRound = %d, want %d", details.FailedRound, failedRound)
			}
			if failedRound == 1 && details.LastHandoff != nil {
				t.Fatalf("round 1 failure carries a handoff: %+v", details.LastHandoff)
			}
			if failedRound == 3 && (details.LastHandoff == nil || details.LastHandoff.Summary != "round 2 done") {
				t.Fatalf("lastHandoff = %+v, want round 2's report", details.LastHandoff)
			}
			if len(s.inputs) != failedRound {
				t.Fatalf("child failure was retried: %d round attempts", len(s.inputs))
			}
			if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeFailed || st.Round != failedRound {
				t.Fatalf("status after the failure = %+v", st)
			}
			if !strings.Contains(err.Error(), "model said 401") {
				t.Fatalf("error %q lost the cause", err)
			}
		})
	}
}

func TestInfrastructureFailureIsRetriedThenRoundFailed(t *testing.T) {
	limits := testLimits()
	limits.RoundAttempts = 2
	s := &script{failAt: map[int]error{1: temporal.NewApplicationError("model unavailable", activities.ErrTypeModelUnavailable)}}
	env := newEnv(t, limits, s)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	applicationError(t, err, ErrTypeRoundFailed)
	if len(s.inputs) != 2 {
		t.Fatalf("round attempts = %d, want 2 (retryable error, 2 attempts)", len(s.inputs))
	}
}

func TestInvalidReportIsRefusedByTheWorkflow(t *testing.T) {
	oversized := continueReport(2)
	oversized.Summary = strings.Repeat("x", 300)
	tests := map[string]report.Report{
		"semantic": {Status: report.StatusComplete, Summary: "done", Evidence: []string{}, NextSteps: []string{}},
		"oversize": oversized,
	}
	for name, bad := range tests {
		t.Run(name, func(t *testing.T) {
			limits := testLimits()
			limits.MaxHandoffChars = 200
			s := &script{reports: map[int]report.Report{2: bad}}
			env := newEnv(t, limits, s)
			_, err := execute(t, env, `{"objective":"fix it"}`)
			appErr := applicationError(t, err, ErrTypeInvalidReport)
			var details InvalidReportDetails
			if err := appErr.Details(&details); err != nil {
				t.Fatal(err)
			}
			if details.Round != 2 || details.LastHandoff == nil || details.LastHandoff.Summary != "round 1 done" {
				t.Fatalf("details = %+v", details)
			}
			if len(s.inputs) != 2 {
				t.Fatalf("ran %d rounds after an invalid report", len(s.inputs))
			}
		})
	}
}

// The test environment does not cancel an activity's ctx (the real-stack
// tests prove quiescence); here the workflow must send the cancel to the
// running round and close as canceled rather than failed.
func TestCancelDuringRound(t *testing.T) {
	var suite workflowSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Ralph, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context) (activities.Limits, error) { return testLimits(), nil },
		activity.RegisterOptions{Name: activities.ResolveLimitsName})
	s := &script{}
	env.RegisterActivityWithOptions(s.runRound, activity.RegisterOptions{Name: activities.RunRoundName})
	// Round 1 finishes at once; round 2 would take an hour, so the cancel lands in it.
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).Return(s.runRound).Once()
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).After(time.Hour).Return(s.runRound)
	var canceled []string
	env.SetOnActivityCanceledListener(func(info *activity.Info) { canceled = append(canceled, info.ActivityType.Name) })
	var heartbeatTimeout time.Duration
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		heartbeatTimeout = info.HeartbeatTimeout
	})
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(`{"objective":"fix it"}`), (*Continuation)(nil))
	err := env.GetWorkflowError()
	if !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error = %v, want canceled", err)
	}
	if len(canceled) != 1 || canceled[0] != activities.RunRoundName {
		t.Fatalf("cancelled activities = %v, want the running round", canceled)
	}
	if len(s.inputs) > 2 {
		t.Fatalf("%d rounds started, want nothing after the cancel in round 2", len(s.inputs))
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeCancelled || st.Round != 2 {
		t.Fatalf("status after cancel = %+v", st)
	}
	if want := time.Duration(testLimits().HeartbeatTimeoutSeconds) * time.Second; heartbeatTimeout != want {
		t.Fatalf("round heartbeat timeout = %v, want the limits' %v", heartbeatTimeout, want)
	}
}

func TestContinueAsNewCarriesRoundUsageAndReport(t *testing.T) {
	limits := testLimits()
	limits.RoundsPerRun = 2
	s := &script{reports: map[int]report.Report{5: completeReport(5)}}
	env := newEnv(t, limits, s)
	_, err := execute(t, env, `{"objective":"fix it","workspace":"w"}`)
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("error = %v, want continue-as-new after 2 rounds", err)
	}
	var raw json.RawMessage
	var cont Continuation
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &raw, &cont); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	wantUsage := usage.Usage{ModelCalls: 4, ToolCalls: 6, PromptTokens: 200, CompletionTokens: 20}
	if cont.NextRound != 3 || cont.MaxRounds != 6 || cont.Objective != "fix it" || cont.Workspace != "w" ||
		cont.Usage != wantUsage || cont.LastReport == nil || cont.LastReport.Summary != "round 2 done" || !reflect.DeepEqual(cont.Limits, limits) {
		t.Fatalf("continuation = %+v", cont)
	}
	if len(raw) != 0 && string(raw) != "null" {
		t.Fatalf("continue-as-new repeats the raw input: %s", raw)
	}

	// The next run resumes from the continuation alone.
	s2 := &script{reports: map[int]report.Report{5: completeReport(5)}}
	env2 := newEnv(t, activities.Limits{}, s2) // a resumed run must not resolve limits again
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	// The query of the resumed run answers from carried state: round count,
	// usage of every earlier run and the last accepted report.
	st := queryStatus(t, env2)
	if st.Round != 4 || st.MaxRounds != 6 || st.LastReport == nil || st.LastReport.Summary != "round 4 done" ||
		st.Usage.ModelCalls != 8 || len(st.Rounds) != 2 || st.Rounds[0].Round != 3 {
		t.Errorf("status of the resumed run = %+v", st)
	}
	var can2 *workflow.ContinueAsNewError
	if !errors.As(env2.GetWorkflowError(), &can2) {
		t.Fatalf("second run error = %v, want another continue-as-new", env2.GetWorkflowError())
	}
	var cont2 Continuation
	if err := converter.GetDefaultDataConverter().FromPayloads(can2.Input, &raw, &cont2); err != nil {
		t.Fatal(err)
	}
	if s2.inputs[0].Round != 3 || s2.inputs[0].Previous.Summary != "round 2 done" || cont2.NextRound != 5 {
		t.Fatalf("resumed rounds = %+v, next = %d", s2.inputs, cont2.NextRound)
	}

	env3 := newEnv(t, activities.Limits{}, s2)
	env3.SetContinuedExecutionRunID("run-2")
	env3.ExecuteWorkflow(WorkflowName, nil, &cont2)
	var res Result
	if err := env3.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if err := env3.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	total := usage.Usage{ModelCalls: 10, ToolCalls: 15, PromptTokens: 500, CompletionTokens: 50}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 5 || res.Usage != total {
		t.Fatalf("final result = %+v", res)
	}
}

func TestStatusQueryBeforeDuringAndAfterRounds(t *testing.T) {
	var suite workflowSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Ralph, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context) (activities.Limits, error) { return testLimits(), nil },
		activity.RegisterOptions{Name: activities.ResolveLimitsName})
	s := &script{reports: map[int]report.Report{2: completeReport(2)}}
	env.RegisterActivityWithOptions(s.runRound, activity.RegisterOptions{Name: activities.RunRoundName})
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).After(time.Hour).Return(
		func(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
			return s.runRound(ctx, in)
		})

	var before, during1, during2 Status
	env.RegisterDelayedCallback(func() { before = queryStatus(t, env) }, time.Millisecond)
	env.RegisterDelayedCallback(func() { during1 = queryStatus(t, env) }, 30*time.Minute)
	env.RegisterDelayedCallback(func() { during2 = queryStatus(t, env) }, 90*time.Minute)
	env.ExecuteWorkflow(WorkflowName, json.RawMessage(`{"objective":"fix it","maxRounds":4}`), (*Continuation)(nil))
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	// At 1 ms the run is either still resolving its limits (a local
	// activity that takes real time, so a loaded machine sees this: the
	// input is not applied yet) or already in round 1; nothing has finished.
	starting := before.Phase == PhaseStarting && before.MaxRounds == 0 && before.Objective == ""
	inRound1 := before.Phase == PhaseRunning && before.MaxRounds == 4 && before.Round == 1 && before.Objective == "fix it"
	if !(starting || inRound1) || len(before.Rounds) != 0 || before.LastReport != nil {
		t.Fatalf("status before rounds = %+v", before)
	}
	if during1.Phase != PhaseRunning || during1.Round != 1 || len(during1.Rounds) != 0 || during1.LastReport != nil {
		t.Fatalf("status during round 1 = %+v", during1)
	}
	if during2.Phase != PhaseRunning || during2.Round != 2 || len(during2.Rounds) != 1 ||
		during2.LastReport == nil || during2.LastReport.Summary != "round 1 done" || during2.Usage.ModelCalls != 2 {
		t.Fatalf("status during round 2 = %+v", during2)
	}
	after := queryStatus(t, env)
	if after.Phase != PhaseFinished || after.Outcome != report.OutcomeComplete || after.Round != 2 ||
		len(after.Rounds) != 2 || after.Rounds[1].Status != report.StatusComplete || after.Rounds[1].SessionID != "session-2" {
		t.Fatalf("status after = %+v", after)
	}
}
