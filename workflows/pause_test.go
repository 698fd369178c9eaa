package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
)

// A paused run whose time budget runs out ends at the deadline, not at the
// next resume (which here never comes).
func TestPausedRunEndsAtItsDeadline(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Minute)
	pause := sendUpdate(env, time.Minute, UpdatePause)
	start := env.Now()
	res, err := execute(t, env, `{"objective":"fix it","maxMinutes":90}`)
	if err != nil || pause.rejected != nil {
		t.Fatal(err, pause.rejected)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Limit != LimitTime || res.RoundsStarted != 1 || len(s.inputs) != 1 {
		t.Fatalf("result %+v after %d rounds", res, len(s.inputs))
	}
	if took := env.Now().Sub(start); took != 90*time.Minute {
		t.Fatalf("the paused run ended after %s, want at its 90-minute deadline", took)
	}
}

// A pause longer than RALPH_MAX_PAUSE_HOURS ends the run stopped, saying why.
func TestForgottenPauseEndsTheRun(t *testing.T) {
	s := &script{}
	limits := testLimits()
	env := newEnv(t, limits, s)
	slowRounds(env, s, 10*time.Minute)
	sendUpdate(env, time.Minute, UpdatePause)
	start := env.Now()
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeStopped || res.Reason == nil || *res.Reason != "paused for more than 168 hours" || res.RoundsStarted != 1 {
		t.Fatalf("result %+v", res)
	}
	if took := env.Now().Sub(start); took != 10*time.Minute+168*time.Hour {
		t.Fatalf("the run ended after %s, want 168 hours after the pause began", took)
	}
}

// A paused run can be extended: the new deadline is where the pause ends.
func TestExtendWhilePausedMovesWherePauseEnds(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Minute)
	sendUpdate(env, time.Minute, UpdatePause)
	ext := sendUpdate(env, 30*time.Minute, UpdateExtend, json.RawMessage(`{"maxMinutes":120}`))
	start := env.Now()
	res, err := execute(t, env, `{"objective":"fix it","maxMinutes":60}`)
	if err != nil || ext.rejected != nil || ext.ack.Phase != PhasePaused {
		t.Fatalf("%v; extend %+v", err, ext)
	}
	if took := env.Now().Sub(start); res.Limit != LimitTime || took != 120*time.Minute {
		t.Fatalf("result %+v after %s, want time at the extended 120 minutes", res, took)
	}
}

// timerLog records the workflow's timers by duration: cancelled or fired.
type timerLog struct {
	durations map[string]time.Duration
	cancelled map[time.Duration]int
	fired     map[time.Duration]int
}

func logTimers(env *testsuite.TestWorkflowEnvironment) *timerLog {
	l := &timerLog{durations: map[string]time.Duration{}, cancelled: map[time.Duration]int{}, fired: map[time.Duration]int{}}
	env.SetOnTimerScheduledListener(func(id string, d time.Duration) { l.durations[id] = d })
	env.SetOnTimerCanceledListener(func(id string) { l.cancelled[l.durations[id]]++ })
	env.SetOnTimerFiredListener(func(id string) { l.fired[l.durations[id]]++ })
	return l
}

// A wait that ends before its timeout cancels its timer (issue 42: a pause
// timer set at 100 h fired at 268 h, long after the resume): the pause, the
// deferred round's wait and the reset run's wait for the rewound signal.
func TestWaitsCancelTheirTimers(t *testing.T) {
	t.Run("pause", func(t *testing.T) {
		s := &script{}
		env := newEnv(t, testLimits(), s)
		slowRounds(env, s, 10*time.Minute)
		timers := logTimers(env)
		sendUpdate(env, time.Minute, UpdatePause)
		sendUpdate(env, 2*time.Hour, UpdateResume)
		if _, err := execute(t, env, `{"objective":"fix it","maxRounds":2}`); err != nil {
			t.Fatal(err)
		}
		if pause := 168 * time.Hour; timers.cancelled[pause] != 1 || timers.fired[pause] != 0 {
			t.Fatalf("the pause's timer: cancelled %d, fired %d times; want cancelled at the resume", timers.cancelled[pause], timers.fired[pause])
		}
	})
	t.Run("deferred round", func(t *testing.T) {
		s := &script{deferrals: map[int][]activities.Deferred{1: {rateLimited(3600)}}}
		env := newEnv(t, testLimits(), s)
		timers := logTimers(env)
		sendUpdate(env, 10*time.Minute, UpdatePause)
		sendUpdate(env, 20*time.Minute, UpdateResume)
		if _, err := execute(t, env, `{"objective":"fix it","maxRounds":1}`); err != nil {
			t.Fatal(err)
		}
		if wait := time.Hour; timers.cancelled[wait] != 1 || timers.fired[wait] != 0 {
			t.Fatalf("the wait's timer: cancelled %d, fired %d times; want cancelled at the pause", timers.cancelled[wait], timers.fired[wait])
		}
	})
	t.Run("rewound signal", func(t *testing.T) {
		asResetRun(t)
		s := &script{}
		env := newEnv(t, testLimits(), s)
		timers := logTimers(env)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalRewound, RewoundSignal{Round: 1}) }, 3*time.Second)
		if _, err := execute(t, env, `{"objective":"fix it","maxRounds":1}`); err != nil {
			t.Fatal(err)
		}
		if timers.cancelled[rewoundWait] != 1 || timers.fired[rewoundWait] != 0 {
			t.Fatalf("the rewound wait's timer: cancelled %d, fired %d times", timers.cancelled[rewoundWait], timers.fired[rewoundWait])
		}
	})
}
