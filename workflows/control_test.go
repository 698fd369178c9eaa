package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"encoding/json"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// slowRounds makes every round take roundTime of workflow time, so updates
// can arrive while a round runs; s still decides what each round returns.
func slowRounds(env *testsuite.TestWorkflowEnvironment, s *script, roundTime time.Duration) {
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).After(roundTime).Return(
		func(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
			return s.runRound(ctx, in)
		})
}

// update sends an update at workflow time `at` and records its outcome.
type updateResult struct {
	rejected error
	failed   error
	ack      Ack
	status   Status // describe's answer
	done     bool
}

func sendUpdate(env *testsuite.TestWorkflowEnvironment, at time.Duration, name string, args ...any) *updateResult {
	r := &updateResult{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, name+at.String(), &testsuite.TestUpdateCallback{
			OnReject: func(err error) { r.rejected, r.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				r.done, r.failed = true, err
				switch a := v.(type) {
				case Ack:
					r.ack = a
				case Status:
					r.status = a
				}
			},
		}, args...)
	}, at)
	return r
}

func TestStopDuringARoundEndsTheRunAfterIt(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	stop := sendUpdate(env, 15*time.Second, UpdateStop, StopRequest{Reason: "reviewing the diff"})
	again := sendUpdate(env, 17*time.Second, UpdateStop, StopRequest{})
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil {
		t.Fatal(err)
	}
	if stop.rejected != nil || !stop.done || !stop.ack.StopRequested {
		t.Fatalf("stop update = %+v", stop)
	}
	if again.rejected == nil || !strings.Contains(again.rejected.Error(), "already pending") {
		t.Fatalf("second stop = %+v, want rejected as already pending", again)
	}
	if res.Status != report.OutcomeStopped || res.RoundsStarted != 2 || res.Reason == nil || *res.Reason != "reviewing the diff" ||
		res.Report == nil || res.Report.Summary != "round 2 done" || len(s.inputs) != 2 {
		t.Fatalf("result = %+v after %d rounds", res, len(s.inputs))
	}
	if st := queryStatus(t, env); st.Outcome != report.OutcomeStopped || st.Phase != PhaseFinished {
		t.Fatalf("status = %+v", st)
	}
}

func TestCompleteWinsOverAPendingStop(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: completeReport(2)}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	sendUpdate(env, 15*time.Second, UpdateStop, StopRequest{})
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("result = %+v, %v: a complete report of the stopping round wins", res, err)
	}
}

func TestPauseHoldsTheLoopUntilResume(t *testing.T) {
	s := &script{reports: map[int]report.Report{3: completeReport(3)}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	pause := sendUpdate(env, 5*time.Second, UpdatePause)
	pauseAgain := sendUpdate(env, 6*time.Second, UpdatePause)
	var during Status
	env.RegisterDelayedCallback(func() { during = queryStatus(t, env) }, 7*time.Second)
	var paused Status
	env.RegisterDelayedCallback(func() { paused = queryStatus(t, env) }, 3*time.Hour)
	resume := sendUpdate(env, 5*time.Hour, UpdateResume)
	resumeAgain := sendUpdate(env, 5*time.Hour+time.Second, UpdateResume)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if pause.rejected != nil || pauseAgain.rejected == nil || !strings.Contains(pauseAgain.rejected.Error(), "pausing") {
		t.Fatalf("pause = %+v, pause again = %+v", pause, pauseAgain)
	}
	if during.Phase != PhaseRunning || !during.PauseRequested {
		t.Fatalf("status while the round still runs = %+v, want running with a pause requested", during)
	}
	if paused.Phase != PhasePaused || paused.Round != 1 || len(s.inputs) < 1 {
		t.Fatalf("status while paused = %+v", paused)
	}
	if resume.rejected != nil || resumeAgain.rejected == nil || !strings.Contains(resumeAgain.rejected.Error(), "not paused") {
		t.Fatalf("resume = %+v, resume again = %+v", resume, resumeAgain)
	}
}

func TestStopWhilePausedEndsAtOnce(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	sendUpdate(env, 5*time.Second, UpdatePause)
	sendUpdate(env, 24*time.Hour, UpdateStop, StopRequest{Reason: "done for today"})
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeStopped || res.RoundsStarted != 1 || len(s.inputs) != 1 || res.Reason == nil || *res.Reason != "done for today" {
		t.Fatalf("result = %+v, %v after %d rounds", res, err, len(s.inputs))
	}
}

func TestUpdatesAfterTheEndAreRejected(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: blockedReport()}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	// The run finishes at 10 s; the workflow is kept open by nothing, so
	// validators are exercised directly against the finished loop instead.
	if _, err := execute(t, env, `{"objective":"fix it"}`); err != nil {
		t.Fatal(err)
	}
	l := &loop{status: Status{Phase: PhaseFinished}}
	for name, err := range map[string]error{
		UpdateStop: l.validateStop(StopRequest{}), UpdatePause: l.validatePause(), UpdateResume: l.validateResume(),
	} {
		if err == nil || !strings.Contains(err.Error(), "already finished") {
			t.Errorf("%s after the end: %v, want rejected", name, err)
		}
	}
	long := StopRequest{Reason: strings.Repeat("x", MaxStopReasonChars+1)}
	if err := (&loop{}).validateStop(long); err == nil || !strings.Contains(err.Error(), "reason") {
		t.Errorf("an over-long stop reason: %v", err)
	}
}

func TestTokenBudgetEndsTheRun(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	res, err := execute(t, env, `{"objective":"fix it","maxTokens":250}`)
	if err != nil {
		t.Fatal(err)
	}
	// Each round spends 110 tokens: after two, the 30 left cannot pay for a
	// round's first request (50 tokens), so the run ends before a third
	// round that could only hand off at once.
	if res.Status != report.OutcomeBudgetLimited || res.Limit != LimitTokens || res.RoundsStarted != 2 || len(s.inputs) != 2 {
		t.Fatalf("result = %+v, %d rounds ran", res, len(s.inputs))
	}
	if s.inputs[0].TokenBudget != 250 || s.inputs[1].TokenBudget != 140 {
		t.Fatalf("rounds got token budgets %d, %d; want what was left (250, 140)", s.inputs[0].TokenBudget, s.inputs[1].TokenBudget)
	}
	st := queryStatus(t, env)
	if st.Budget.MaxTokens == nil || *st.Budget.MaxTokens != 250 || st.Budget.MaxMinutes != nil {
		t.Fatalf("status budget = %+v", st.Budget)
	}
}

func TestDeploymentTokenCeilingIsTheDefault(t *testing.T) {
	limits := testLimits()
	limits.MaxRunTokens = 150
	s := &script{}
	env := newEnv(t, limits, s)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	// 40 tokens left after round 1: less than a first request (50).
	if err != nil || res.Limit != LimitTokens || res.RoundsStarted != 1 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	env = newEnv(t, limits, &script{})
	_, err = execute(t, env, `{"objective":"fix it","maxTokens":151}`)
	if appErr := applicationError(t, err, ErrTypeInvalidInput); !strings.Contains(appErr.Error(), "maxTokens:") ||
		!strings.Contains(appErr.Error(), "RALPH_MAX_RUN_TOKENS") {
		t.Fatalf("over the ceiling: %v", appErr)
	}
}

func TestTimeBudgetEndsTheRun(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 25*time.Minute)
	res, err := execute(t, env, `{"objective":"fix it","maxMinutes":60}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Limit != LimitTime || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v", res)
	}
	first, third := s.inputs[0].RunDeadline, s.inputs[2].RunDeadline
	if first.IsZero() || !first.Equal(third) {
		t.Fatalf("run deadlines %v, %v: every round gets the run's one deadline", first, third)
	}
}

func TestIdleBudgetEndsTheRun(t *testing.T) {
	s := &script{idle: map[int]bool{1: true, 3: true, 4: true, 5: true}}
	limits := testLimits()
	limits.MaxIdleRounds = 3
	env := newEnv(t, limits, s)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	// Round 2 changed the workspace, so only rounds 3, 4, 5 count.
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != LimitIdle || res.RoundsStarted != 5 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	// Idle up to the last round: the round cap is what ended the run.
	env = newEnv(t, limits, &script{idle: map[int]bool{4: true, 5: true, 6: true}})
	if res, _ := execute(t, env, `{"objective":"fix it"}`); res.Limit != LimitRounds || res.RoundsStarted != 6 {
		t.Fatalf("result = %+v", res)
	}
	limits.MaxIdleRounds = 2
	env = newEnv(t, limits, &script{idle: map[int]bool{2: true, 3: true}})
	if res, _ := execute(t, env, `{"objective":"fix it"}`); res.Limit != LimitIdle || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v", res)
	}
}

func TestRoundCapIsNamedAsTheLimit(t *testing.T) {
	env := newEnv(t, testLimits(), &script{})
	res, err := execute(t, env, `{"objective":"fix it","maxRounds":2}`)
	if err != nil || res.Limit != LimitRounds || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

func TestForgedContinuationIsRefused(t *testing.T) {
	limits := testLimits()
	cont := &Continuation{Objective: "x", Workspace: "w", MaxRounds: 6, NextRound: 2, Limits: limits,
		LastReport: func() *report.Report { r := continueReport(1); return &r }()}
	s := &script{}
	env := newEnv(t, limits, s)
	env.ExecuteWorkflow(WorkflowName, nil, cont)
	appErr := applicationError(t, env.GetWorkflowError(), ErrTypeInvalidInput)
	if !strings.Contains(appErr.Error(), "continue-as-new") || len(s.inputs) != 0 {
		t.Fatalf("forged continuation: %v (%d rounds)", appErr, len(s.inputs))
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeFailed {
		t.Fatalf("status = %+v", st)
	}

}

// TestContinuedRunKeepsTheReportItsPredecessorAccepted: a report that
// today's rules refuse (here: a continue without next steps, as if
// report.Validate had been tightened since) but that the run accepted
// before its continue-as-new is carried on, not a reason to fail the run.
func TestContinuedRunKeepsTheReportItsPredecessorAccepted(t *testing.T) {
	limits := testLimits()
	carried := &report.Report{Status: report.StatusContinue, Summary: "x", Evidence: []string{}, NextSteps: []string{}}
	if report.Validate(*carried, limits.MaxHandoffChars) == nil {
		t.Fatal("the carried report must break today's rules for this test")
	}
	cont := &Continuation{Objective: "x", Workspace: "w", MaxRounds: 3, NextRound: 2, Limits: limits, LastReport: carried}
	s := &script{}
	env := newEnv(t, limits, s)
	env.SetContinuedExecutionRunID("previous-run")
	env.ExecuteWorkflow(WorkflowName, nil, cont)
	var res Result
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("a continued run failed on the report its predecessor accepted: %v", err)
	}
	if err := env.GetWorkflowResult(&res); err != nil || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if len(s.inputs) != 2 || s.inputs[0].Previous == nil || s.inputs[0].Previous.Summary != "x" {
		t.Fatalf("round 2 was not handed the carried report: %+v", s.inputs)
	}
}

func TestSameBadInputSameMessage(t *testing.T) {
	var first string
	for i := 0; i < 20; i++ {
		env := newEnv(t, testLimits(), &script{})
		_, err := execute(t, env, `{"objective":"x","zeta":1,"alpha":2,"model":3,"beta":4}`)
		msg := applicationError(t, err, ErrTypeInvalidInput).Error()
		if i == 0 {
			first = msg
			if !strings.Contains(msg, "alpha:") {
				t.Fatalf("message %q should name the first unknown field in order", msg)
			}
		} else if msg != first {
			t.Fatalf("message %d = %q, first = %q", i, msg, first)
		}
	}
}

func TestStatusAfterInvalidInputIsFinishedFailed(t *testing.T) {
	env := newEnv(t, testLimits(), &script{})
	if _, err := execute(t, env, `{"objective":""}`); err == nil {
		t.Fatal("empty objective accepted")
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeFailed {
		t.Fatalf("status = %+v", st)
	}
}

func TestCancelWinsOverTheStoppingRoundsReport(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Second)
	env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it"}`), (*Continuation)(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("error = %v, want canceled although the round reported complete", err)
	}
	if st := queryStatus(t, env); st.Outcome != OutcomeCancelled {
		t.Fatalf("status = %+v", st)
	}
}

func TestRoundFailedCarriesTheFailedRoundsUsage(t *testing.T) {
	spent := usage.Usage{ModelCalls: 7, ToolCalls: 2, PromptTokens: 900, CompletionTokens: 40}
	s := &script{failAt: map[int]error{2: temporal.NewNonRetryableApplicationError("bad request", activities.ErrTypeChildFailed, nil,
		activities.FailureDetails{SessionID: "s", Usage: spent})}}
	env := newEnv(t, testLimits(), s)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	appErr := applicationError(t, err, ErrTypeRoundFailed)
	var d RoundFailedDetails
	if err := appErr.Details(&d); err != nil {
		t.Fatal(err)
	}
	if d.FailedRound != 2 || d.Usage != spent || d.LastHandoff == nil {
		t.Fatalf("details = %+v", d)
	}
	if st := queryStatus(t, env); st.Usage.ModelCalls != 2+7 {
		t.Fatalf("run usage = %+v, want round 1's and the failed round's", st.Usage)
	}
}

func TestVerifiedCompletion(t *testing.T) {
	pass := &report.Verification{Command: "go test ./...", ExitCode: 0, DurationMs: 40, Output: "ok"}
	s := &script{reports: map[int]report.Report{2: completeReport(2)}, verified: map[int]*report.Verification{2: pass}}
	env := newEnv(t, testLimits(), s)
	res, err := execute(t, env, `{"objective":"fix it","verifyCommand":" go test ./... "}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verification == nil || *res.Verification != *pass || s.inputs[0].VerifyCommand != "go test ./..." {
		t.Fatalf("result = %+v, round input %+v", res, s.inputs[0])
	}
	if st := queryStatus(t, env); !st.Rounds[1].Verified || st.Rounds[0].Verified {
		t.Fatalf("status rounds = %+v", st.Rounds)
	}
}

func TestCompleteWithoutPassingVerificationIsInvalidReport(t *testing.T) {
	limits := testLimits()
	limits.VerifyCommand = "make check"
	cases := map[string]*report.Verification{
		"missing":       nil,
		"failed":        {Command: "make check", ExitCode: 2},
		"other command": {Command: "true", ExitCode: 0},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			s := &script{reports: map[int]report.Report{1: completeReport(1)}, verified: map[int]*report.Verification{1: v}}
			env := newEnv(t, limits, s)
			_, err := execute(t, env, `{"objective":"fix it"}`)
			appErr := applicationError(t, err, ErrTypeInvalidReport)
			if !strings.Contains(appErr.Error(), "make check") || s.inputs[0].VerifyCommand != "make check" {
				t.Fatalf("error = %v", appErr)
			}
		})
	}
}

func TestCheckpointsReachResultAndStatus(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: completeReport(2)}, commits: map[int]string{1: "aaa1", 2: "bbb2"}}
	env := newEnv(t, testLimits(), s)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Checkpoint == nil || res.Checkpoint.Commit != "bbb2" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if st := queryStatus(t, env); st.Rounds[0].Commit != "aaa1" || st.Rounds[1].Commit != "bbb2" {
		t.Fatalf("status rounds = %+v", st.Rounds)
	}
}

func TestBudgetsSurviveContinueAsNew(t *testing.T) {
	limits := testLimits()
	limits.RoundsPerRun = 2
	s := &script{idle: map[int]bool{2: true}}
	env := newEnv(t, limits, s)
	_, err := execute(t, env, `{"objective":"fix it","maxTokens":1000,"maxMinutes":90,"verifyCommand":"true"}`)
	cont := decodeContinuation(t, err)
	if cont.Budget.MaxTokens != 1000 || cont.Budget.MaxMinutes != 90 || cont.Budget.Deadline.IsZero() ||
		cont.IdleRounds != 1 || cont.VerifyCommand != "true" {
		t.Fatalf("continuation = %+v", cont)
	}
	// The next run keeps the original deadline and counts on from the carried usage.
	env2 := newEnv(t, activities.Limits{}, s)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	next := decodeContinuation(t, env2.GetWorkflowError())
	if !next.Budget.Deadline.Equal(cont.Budget.Deadline) || s.inputs[2].TokenBudget != 1000-220 {
		t.Fatalf("second continuation = %+v, round 3 token budget %d", next, s.inputs[2].TokenBudget)
	}
}

// decodeContinuation reads the continuation out of a continue-as-new error.
func decodeContinuation(t *testing.T, err error) Continuation {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("error = %v, want continue-as-new", err)
	}
	var raw json.RawMessage
	var cont Continuation
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &raw, &cont); err != nil {
		t.Fatalf("decode continue-as-new input: %v", err)
	}
	return cont
}

func TestSearchAttributesFollowTheRun(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: blockedReport()}}
	env := newEnv(t, testLimits(), s)
	var phases []string
	var last temporal.SearchAttributes
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		p, _ := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttrPhase))
		phases = append(phases, p)
		last = sa
	}).Return(nil)
	if _, err := execute(t, env, `{"objective":"fix it","workspace":"team/repo"}`); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(phases, ","); got != "starting,running,running,finished" {
		t.Fatalf("phases upserted = %s", got)
	}
	outcome, _ := last.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttrOutcome))
	ws, _ := last.GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttrWorkspace))
	round, _ := last.GetInt64(temporal.NewSearchAttributeKeyInt64(SearchAttrRound))
	if outcome != report.OutcomeBlocked || ws != "team/repo" || round != 2 {
		t.Fatalf("final attributes: outcome %q, workspace %q, round %d", outcome, ws, round)
	}

	limits := testLimits()
	limits.SearchAttributes = false
	env = newEnv(t, limits, &script{reports: map[int]report.Report{1: blockedReport()}})
	upserts := 0
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(mock.Arguments) { upserts++ }).Return(nil).Maybe()
	if _, err := execute(t, env, `{"objective":"fix it"}`); err != nil || upserts != 0 {
		t.Fatalf("search attributes off: %d upserts, %v", upserts, err)
	}
}

// The stopped result always carries its reason (also an empty one), and only
// it does; the status names no outcome until the run finishes.
func TestStoppedResultShape(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	var running Status
	env.RegisterDelayedCallback(func() { running = queryStatus(t, env) }, 5*time.Second)
	sendUpdate(env, 6*time.Second, UpdateStop)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(res)
	if !strings.Contains(string(data), `"reason":""`) || strings.Contains(string(data), `"limit"`) {
		t.Fatalf("stopped result = %s", data)
	}
	st, _ := json.Marshal(running)
	if !strings.Contains(string(st), `"outcome":""`) || !strings.Contains(string(st), `"budget":{"maxTokens":null,"maxMinutes":null,"idleRounds":3}`) {
		t.Fatalf("running status = %s", st)
	}
	env = newEnv(t, testLimits(), &script{reports: map[int]report.Report{1: completeReport(1)}})
	res, _ = execute(t, env, `{"objective":"fix it"}`)
	if data, _ := json.Marshal(res); strings.Contains(string(data), `"reason"`) {
		t.Fatalf("complete result carries a reason: %s", data)
	}
}
