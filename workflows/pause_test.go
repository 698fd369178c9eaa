package workflows

import (
	"encoding/json"
	"testing"
	"time"

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
