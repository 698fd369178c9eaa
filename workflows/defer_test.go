package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
)

// timedRounds records the workflow time at which each round session starts.
func timedRounds(env *testsuite.TestWorkflowEnvironment, s *script) *[]time.Time {
	var at []time.Time
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
			at = append(at, env.Now())
			return s.runRound(ctx, in)
		})
	return &at
}

func rateLimited(secs int) activities.Deferred {
	return activities.Deferred{Reason: activities.DeferRateLimited, RetryAfterSeconds: secs}
}

func TestQuotaWaitsTheMaximumThenRunsTheRoundAgain(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)},
		deferrals: map[int][]activities.Deferred{1: {{Reason: activities.DeferQuota}}}}
	env := newEnv(t, testLimits(), s)
	at := timedRounds(env, s)
	var phases []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		p, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttrPhase))
		phases = append(phases, p)
	}).Return(nil)
	var waiting Status
	env.RegisterDelayedCallback(func() { waiting = queryStatus(t, env) }, time.Hour)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if len(*at) != 2 || (*at)[1].Sub((*at)[0]) != 6*time.Hour {
		t.Fatalf("round sessions started at %v, want two, 6 hours apart (RALPH_MAX_WAIT_MINUTES for a quota)", *at)
	}
	if s.inputs[1].Round != 1 || !s.inputs[0].Deferrable || !s.inputs[1].Deferrable {
		t.Fatalf("inputs = %+v, want round 1 twice, both deferrable", s.inputs)
	}
	wantUntil := (*at)[0].Add(6 * time.Hour).UTC().Format(time.RFC3339)
	if waiting.Phase != PhaseWaiting || waiting.WaitingUntil != wantUntil || waiting.WaitReason != activities.DeferQuota ||
		waiting.Round != 1 || waiting.Deferrals != 1 || len(waiting.Rounds) != 0 {
		t.Fatalf("status during the wait = %+v, want waiting until %s for quota", waiting, wantUntil)
	}
	// The deferral's usage counts in the run's usage.
	if res.Usage.ModelCalls != 3 || res.Usage.PromptTokens != 140 {
		t.Fatalf("usage = %+v, want the deferred session's call counted", res.Usage)
	}
	st := queryStatus(t, env)
	if st.WaitingUntil != "" || st.WaitReason != "" || len(st.Rounds) != 1 || st.Rounds[0].Deferrals != 1 || st.Rounds[0].Model != "primary" {
		t.Fatalf("final status = %+v", st)
	}
	if got := strings.Join(phases, " "); !strings.Contains(got, "running waiting running finished") {
		t.Fatalf("RalphPhase upserts = %s, want waiting between the two sessions", got)
	}
}

func TestWaitsHonourTheProviderElseDouble(t *testing.T) {
	s := &script{deferrals: map[int][]activities.Deferred{
		1: {rateLimited(75), {Reason: activities.DeferUnavailable}, {Reason: activities.DeferUnavailable}},
		2: {{Reason: activities.DeferUnavailable}, rateLimited(100000)},
	}, reports: map[int]report.Report{2: completeReport(2)}}
	limits := testLimits()
	limits.MaxWaitMinutes = 60
	env := newEnv(t, limits, s)
	at := timedRounds(env, s)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	var gaps []time.Duration
	for i := 1; i < len(*at); i++ {
		gaps = append(gaps, (*at)[i].Sub((*at)[i-1]))
	}
	// Round 1: the provider's 75 s, then 60 s and 120 s (30 s doubling per
	// consecutive deferral), then round 2 at once; round 2 starts its own
	// count (30 s), and a delay over the ceiling waits the ceiling.
	want := []time.Duration{75 * time.Second, time.Minute, 2 * time.Minute, 0, 30 * time.Second, time.Hour}
	if len(gaps) != len(want) {
		t.Fatalf("gaps = %v, want %v", gaps, want)
	}
	for i := range want {
		if gaps[i] != want[i] {
			t.Fatalf("gaps = %v, want %v", gaps, want)
		}
	}
}

func TestStopDuringAWaitEndsTheRunAtOnce(t *testing.T) {
	s := &script{deferForever: map[int]activities.Deferred{2: rateLimited(3600)}}
	env := newEnv(t, testLimits(), s)
	start := env.Now()
	stop := sendUpdate(env, 10*time.Minute, UpdateStop, StopRequest{Reason: "provider down"})
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || stop.rejected != nil {
		t.Fatalf("result %v, stop %+v", err, stop)
	}
	if res.Status != report.OutcomeStopped || res.RoundsStarted != 1 || len(s.inputs) != 2 || res.Report == nil || res.Report.Summary != "round 1 done" {
		t.Fatalf("result = %+v after %d sessions", res, len(s.inputs))
	}
	if took := env.Now().Sub(start); took >= time.Hour {
		t.Fatalf("the run ended after %s of workflow time: the stop waited for the timer", took)
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != report.OutcomeStopped {
		t.Fatalf("status = %+v", st)
	}
}

func TestPauseDuringAWaitHoldsIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resumeAt time.Duration
		// the deferred round runs again at the end of the wait, or at the
		// resume when that comes later
		wantRerun time.Duration
	}{
		{"resumed before the wait ends", 2 * time.Minute, 10 * time.Minute},
		{"resumed after the wait ended", 3 * time.Hour, 3 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{deferrals: map[int][]activities.Deferred{1: {rateLimited(600)}},
				reports: map[int]report.Report{1: completeReport(1)}}
			env := newEnv(t, testLimits(), s)
			at := timedRounds(env, s)
			pause := sendUpdate(env, time.Minute, UpdatePause)
			var paused, after Status
			env.RegisterDelayedCallback(func() { paused = queryStatus(t, env) }, 90*time.Second)
			resume := sendUpdate(env, tc.resumeAt, UpdateResume)
			env.RegisterDelayedCallback(func() { after = queryStatus(t, env) }, tc.resumeAt+time.Second)
			res, err := execute(t, env, `{"objective":"fix it"}`)
			if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
				t.Fatalf("result = %+v, %v", res, err)
			}
			if pause.rejected != nil || resume.rejected != nil {
				t.Fatalf("pause %+v, resume %+v", pause, resume)
			}
			if paused.Phase != PhasePaused || paused.WaitReason != activities.DeferRateLimited || paused.WaitingUntil == "" {
				t.Fatalf("status while paused = %+v, want paused and still showing the wait", paused)
			}
			if len(*at) != 2 || (*at)[1].Sub((*at)[0]) != tc.wantRerun {
				t.Fatalf("sessions at %v, want the rerun %s after the first", *at, tc.wantRerun)
			}
			if tc.resumeAt < 10*time.Minute && after.Phase != PhaseWaiting {
				t.Fatalf("status after an early resume = %+v, want waiting again", after)
			}
		})
	}
}

func TestCancelDuringAWaitEndsTheRun(t *testing.T) {
	s := &script{deferForever: map[int]activities.Deferred{1: rateLimited(3600)}}
	env := newEnv(t, testLimits(), s)
	env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Minute)
	env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it"}`), (*Continuation)(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("error = %v, want canceled", err)
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeCancelled || len(s.inputs) != 1 {
		t.Fatalf("status = %+v after %d sessions", st, len(s.inputs))
	}
}

func TestTimeBudgetRunsOutDuringAWait(t *testing.T) {
	s := &script{deferForever: map[int]activities.Deferred{1: rateLimited(5 * 3600)}}
	env := newEnv(t, testLimits(), s)
	start := env.Now()
	res, err := execute(t, env, `{"objective":"fix it","maxMinutes":60}`)
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != LimitTime || res.RoundsStarted != 0 || len(s.inputs) != 1 {
		t.Fatalf("result = %+v, %v after %d sessions", res, err, len(s.inputs))
	}
	if took := env.Now().Sub(start); took != time.Hour {
		t.Fatalf("the run ended after %s, want at its one-hour budget", took)
	}
}

func TestTooManyDeferralsFailTheRound(t *testing.T) {
	s := &script{deferForever: map[int]activities.Deferred{2: {Reason: activities.DeferUnavailable}}}
	env := newEnv(t, testLimits(), s)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	appErr := applicationError(t, err, ErrTypeRoundFailed)
	var d RoundFailedDetails
	if derr := appErr.Details(&d); derr != nil {
		t.Fatal(derr)
	}
	if d.FailedRound != 2 || d.LastHandoff == nil || d.Usage.ModelCalls != 50 || len(s.inputs) != 51 {
		t.Fatalf("details = %+v after %d sessions, want round 2 failed after 50 deferrals", d, len(s.inputs))
	}
	if !strings.Contains(appErr.Error(), "RALPH_MAX_DEFERRALS") {
		t.Fatalf("error = %v", appErr)
	}
	if st := queryStatus(t, env); st.Outcome != OutcomeFailed || st.Usage.ModelCalls != 2+50 {
		t.Fatalf("status = %+v", st)
	}
}

func TestDeferralsAreNotRoundsAttemptsOrIdleRounds(t *testing.T) {
	// Every round leaves the workspace unchanged; round 3 is deferred 4
	// times. With an idle budget of 3, deferrals counted as idle rounds
	// would end the run before round 3 hands off.
	s := &script{idle: map[int]bool{1: true, 2: true, 3: true},
		deferrals: map[int][]activities.Deferred{3: {rateLimited(1), rateLimited(1), rateLimited(1), rateLimited(1)}}}
	limits := testLimits()
	limits.RoundAttempts = 2
	env := newEnv(t, limits, s)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != LimitIdle || res.RoundsStarted != 3 || len(s.inputs) != 7 {
		t.Fatalf("result = %+v, %v after %d sessions", res, err, len(s.inputs))
	}
}

func TestRunsWithOldLimitsDoNotDefer(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	limits := testLimits()
	limits.MaxWaitMinutes, limits.MaxDeferrals = 0, 0
	env := newEnv(t, limits, s)
	if _, err := execute(t, env, `{"objective":"fix it"}`); err != nil {
		t.Fatal(err)
	}
	if s.inputs[0].Deferrable {
		t.Fatal("a run whose limits predate deferrals asked its round to defer")
	}
}

func TestTimeBudgetFloorEndsTheRunBeforeAUselessRound(t *testing.T) {
	// maxMinutes 1 with 28-second rounds (never cut by the deadline): round
	// 2 starts with 32 s left; after it 4 s are left, less than a round's
	// minimum of 10 s, so the run ends instead of starting a round that
	// could only hand off at once.
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 28*time.Second)
	res, err := execute(t, env, `{"objective":"fix it","maxMinutes":1}`)
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != LimitTime || res.RoundsStarted != 2 || len(s.inputs) != 2 {
		t.Fatalf("result = %+v, %v after %d rounds", res, err, len(s.inputs))
	}
	// A long budget needs a tenth of itself: 600 min leaves 60 min per round.
	s = &script{}
	env = newEnv(t, testLimits(), s)
	slowRounds(env, s, 250*time.Minute)
	res, err = execute(t, env, `{"objective":"fix it","maxMinutes":600}`)
	// Rounds at 0 and 250 min; at 500 min 100 min are left (>= 60): round 3
	// runs and ends at 750 min, past the budget.
	if err != nil || res.Limit != LimitTime || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

func TestDeferralWait(t *testing.T) {
	for _, tc := range []struct {
		d    activities.Deferred
		n    int
		want time.Duration
	}{
		{activities.Deferred{Reason: activities.DeferQuota, RetryAfterSeconds: 5}, 1, 360 * time.Minute},
		{rateLimited(75), 7, 75 * time.Second},
		{rateLimited(0), 1, 30 * time.Second},
		{rateLimited(0), 4, 240 * time.Second},
		{activities.Deferred{Reason: activities.DeferUnavailable}, 40, 360 * time.Minute},
	} {
		if got := deferralWait(tc.d, tc.n, 360); got != tc.want {
			t.Errorf("deferralWait(%+v, %d) = %s, want %s", tc.d, tc.n, got, tc.want)
		}
	}
}

// A history from before deferrals (no deferred-rounds marker) replays on the
// old path: that code took a deferred session's output as the round's
// hand-off, and its empty report failed the run as invalid. Without the
// guard the round would wait and run again.
func TestDeferredRoundWithoutTheMarkerTakesTheOldPath(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)},
		deferrals: map[int][]activities.Deferred{1: {rateLimited(60)}}}
	env := newEnv(t, testLimits(), s)
	env.OnGetVersion(versionDeferrals, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	appErr := applicationError(t, err, ErrTypeInvalidReport)
	var details InvalidReportDetails
	if err := appErr.Details(&details); err != nil {
		t.Fatal(err)
	}
	if details.Round != 1 || len(s.inputs) != 1 {
		t.Fatalf("details %+v after %d sessions, want round 1 refused after its one session", details, len(s.inputs))
	}
	if st := queryStatus(t, env); st.Phase != PhaseFinished || st.Outcome != OutcomeFailed || st.Usage != deferredUsage {
		t.Fatalf("status %+v, want failed with the deferred session's usage", st)
	}
}
