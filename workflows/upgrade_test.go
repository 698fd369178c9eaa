package workflows

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// continuation decodes a run's continue-as-new, failing when it ended otherwise.
func continuation(t *testing.T, err error) Continuation {
	t.Helper()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("error = %v, want a continue-as-new", err)
	}
	var raw []byte
	var cont Continuation
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &raw, &cont); err != nil {
		t.Fatal(err)
	}
	if can.InitialVersioningBehavior != workflow.ContinueAsNewVersioningBehaviorAutoUpgrade {
		t.Fatalf("continue-as-new versioning behavior = %v, want auto-upgrade", can.InitialVersioningBehavior)
	}
	return cont
}

// A pinned run whose target version changed continues as new at the next
// round boundary (never before its first round), carrying the run on.
func TestPinnedRunMovesToChangedTargetAtRoundBoundary(t *testing.T) {
	s := &script{}
	limits := testLimits()
	limits.UpgradeOnTargetChange = true
	env := newEnv(t, limits, s)
	env.SetTargetWorkerDeploymentVersionChanged(true)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	cont := continuation(t, err)
	if len(s.inputs) != 1 || cont.NextRound != 2 || cont.LastReport == nil || cont.LastReport.Summary != "round 1 done" ||
		!cont.Limits.UpgradeOnTargetChange || cont.Paused {
		t.Fatalf("%d rounds, continuation %+v", len(s.inputs), cont)
	}
}

// Runs that are not pinned (the recorded limits say so: auto-upgrade, or a
// history from before the setting) ignore a target change.
func TestUnpinnedRunIgnoresTargetChange(t *testing.T) {
	s := &script{reports: map[int]report.Report{3: completeReport(3)}}
	env := newEnv(t, testLimits(), s)
	env.SetTargetWorkerDeploymentVersionChanged(true)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result %+v, %v", res, err)
	}
}

// A paused pinned run moves when its target changes during the pause, and
// stays paused in the next run.
func TestPausedPinnedRunMovesToChangedTarget(t *testing.T) {
	s := &script{}
	limits := testLimits()
	limits.UpgradeOnTargetChange = true
	env := newEnv(t, limits, s)
	slowRounds(env, s, 10*time.Minute)
	sendUpdate(env, time.Minute, UpdatePause)
	env.RegisterDelayedCallback(func() { env.SetTargetWorkerDeploymentVersionChanged(true) }, 2*time.Hour)
	start := env.Now()
	_, err := execute(t, env, `{"objective":"fix it"}`)
	cont := continuation(t, err)
	if took := env.Now().Sub(start); took != 2*time.Hour {
		t.Fatalf("moved after %s, want when the target changed (2h)", took)
	}
	if len(s.inputs) != 1 || cont.NextRound != 2 || !cont.Paused {
		t.Fatalf("%d rounds, continuation %+v", len(s.inputs), cont)
	}
}

// A pinned round waiting out a provider limit moves when its target changes
// during the wait; the next run runs that round again.
func TestWaitingPinnedRunMovesToChangedTarget(t *testing.T) {
	s := &script{deferrals: map[int][]activities.Deferred{2: {{Reason: activities.DeferQuota}}}}
	limits := testLimits()
	limits.UpgradeOnTargetChange = true
	env := newEnv(t, limits, s)
	env.RegisterDelayedCallback(func() { env.SetTargetWorkerDeploymentVersionChanged(true) }, 30*time.Minute)
	start := env.Now()
	_, err := execute(t, env, `{"objective":"fix it"}`)
	cont := continuation(t, err)
	if took := env.Now().Sub(start); took != 30*time.Minute {
		t.Fatalf("moved after %s, want when the target changed (30m)", took)
	}
	if len(s.inputs) != 2 || cont.NextRound != 2 || cont.LastReport.Summary != "round 1 done" || cont.Usage.PromptTokens != 100+deferredUsage.PromptTokens {
		t.Fatalf("%d sessions, continuation %+v", len(s.inputs), cont)
	}
}

// A pinned run that moves during a deferred round's wait carries the
// round's deferral count and what those sessions spent: the next run's
// session of that round is the third in a row, so RALPH_MAX_DEFERRALS 3
// fails it, and the failure names all three sessions' usage.
func TestWaitingPinnedRunCarriesItsDeferrals(t *testing.T) {
	s := &script{deferrals: map[int][]activities.Deferred{2: {rateLimited(60), {Reason: activities.DeferQuota}, rateLimited(60)}}}
	limits := testLimits()
	limits.UpgradeOnTargetChange = true
	limits.MaxDeferrals = 3
	env := newEnv(t, limits, s)
	env.RegisterDelayedCallback(func() { env.SetTargetWorkerDeploymentVersionChanged(true) }, 30*time.Minute)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	cont := continuation(t, err)
	if cont.NextRound != 2 || cont.Deferrals != 2 || cont.DeferredUsage != deferredUsage.Add(deferredUsage) {
		t.Fatalf("continuation %+v", cont)
	}
	env2 := newEnv(t, limits, s)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	appErr := applicationError(t, env2.GetWorkflowError(), ErrTypeRoundFailed)
	var d RoundFailedDetails
	if err := appErr.Details(&d); err != nil || !strings.Contains(appErr.Error(), "deferred 3 times") ||
		d.Usage != deferredUsage.Add(deferredUsage).Add(deferredUsage) {
		t.Fatalf("%v, details %+v", appErr, d)
	}
}

// A rewound signal that lands while a pinned run is paused is taken before
// the run moves: the continuation counts the abandoned spend.
func TestPausedPinnedRunTakesTheRewoundSignalBeforeItMoves(t *testing.T) {
	s := &script{}
	limits := testLimits()
	limits.UpgradeOnTargetChange = true
	env := newEnv(t, limits, s)
	slowRounds(env, s, 10*time.Minute)
	sendUpdate(env, time.Minute, UpdatePause)
	round := usage.Usage{ModelCalls: 2, ToolCalls: 3, PromptTokens: 100, CompletionTokens: 10}
	lost := usage.Usage{ModelCalls: 1, PromptTokens: 300, CompletionTokens: 30}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalRewound, RewoundSignal{Round: 1, Usage: round.Add(lost)})
	}, time.Hour)
	env.RegisterDelayedCallback(func() { env.SetTargetWorkerDeploymentVersionChanged(true) }, 2*time.Hour)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	cont := continuation(t, err)
	if !cont.Paused || cont.Usage != round.Add(lost) {
		t.Fatalf("continuation %+v, want the usage of round 1 and the abandoned spend", cont)
	}
}

// A paused run, and a round waiting out a provider limit, continue as new
// when the server suggests it (issue 42: 167 hourly describes went into one
// paused history), still paused or waiting in the next run; the next run
// holds again.
func TestHeldRunsContinueAsNewWhenSuggested(t *testing.T) {
	t.Run("paused", func(t *testing.T) {
		s := &script{}
		env := newEnv(t, testLimits(), s)
		slowRounds(env, s, 10*time.Minute)
		sendUpdate(env, time.Minute, UpdatePause)
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Hour)
		start := env.Now()
		_, err := execute(t, env, `{"objective":"fix it"}`)
		cont := continuation(t, err)
		if took := env.Now().Sub(start); took != 2*time.Hour || len(s.inputs) != 1 || cont.NextRound != 2 || !cont.Paused {
			t.Fatalf("after %s and %d rounds: continuation %+v", took, len(s.inputs), cont)
		}
		env2 := newEnv(t, testLimits(), s)
		env2.SetContinuedExecutionRunID("run-1")
		sendUpdate(env2, time.Hour, UpdateResume)
		env2.ExecuteWorkflow(WorkflowName, nil, &cont)
		var res Result
		if err := env2.GetWorkflowResult(&res); err != nil || res.RoundsStarted != 6 || len(s.inputs) != 6 {
			t.Fatalf("the next run: %+v, %v after %d rounds", res, err, len(s.inputs))
		}
	})
	t.Run("waiting", func(t *testing.T) {
		s := &script{deferrals: map[int][]activities.Deferred{2: {{Reason: activities.DeferQuota}}}}
		env := newEnv(t, testLimits(), s)
		env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 30*time.Minute)
		start := env.Now()
		_, err := execute(t, env, `{"objective":"fix it"}`)
		cont := continuation(t, err)
		if took := env.Now().Sub(start); took != 30*time.Minute || cont.NextRound != 2 || cont.Deferrals != 1 {
			t.Fatalf("after %s: continuation %+v", took, cont)
		}
	})
}
