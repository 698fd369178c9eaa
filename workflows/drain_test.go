package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
)

// signalWithRound delivers signals while round `at` runs, without a
// workflow task of their own: they reach the workflow in the same task as
// the round's completion, the task that continues as new.
func signalWithRound(env *testsuite.TestWorkflowEnvironment, s *script, at int, signals map[string]any) {
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
			if in.Round == at {
				for _, name := range []string{SignalStop, SignalGuide} {
					if arg, ok := signals[name]; ok {
						env.SignalWorkflowSkippingWorkflowTask(name, arg)
					}
				}
			}
			return s.runRound(ctx, in)
		})
}

func TestSignalsInTheContinueAsNewTaskAreCarried(t *testing.T) {
	limits := testLimits()
	limits.RoundsPerRun = 2
	s := &script{}
	env := newEnv(t, limits, s)
	signalWithRound(env, s, 2, map[string]any{
		SignalStop:  StopRequest{Reason: "  the campaign stops  "},
		SignalGuide: GuideRequest{Text: "Look at main.go."},
	})
	env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it"}`), (*Continuation)(nil))
	cont := decodeContinuation(t, env.GetWorkflowError())
	if !cont.StopRequested || cont.StopReason != "the campaign stops" || cont.Guidance != "Look at main.go." || cont.NextRound != 3 {
		t.Fatalf("continuation: stop %v %q, guidance %q, next round %d; want the stop and the guidance carried to round 3",
			cont.StopRequested, cont.StopReason, cont.Guidance, cont.NextRound)
	}

	// The next run acts on the stop before it starts a round.
	s2 := &script{}
	env2 := newEnv(t, activities.Limits{}, s2)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	var res Result
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatalf("next run failed: %v", err)
	}
	if err := env2.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeStopped || res.Reason == nil || *res.Reason != "the campaign stops" || res.RoundsStarted != 2 {
		t.Fatalf("next run's result = %+v (reason %v), want stopped after round 2 with the carried reason", res, res.Reason)
	}
	if len(s2.inputs) != 0 {
		t.Fatalf("next run started %d round(s) despite the carried stop", len(s2.inputs))
	}
	if st := queryStatus(t, env2); st.Guidance == nil || st.Guidance.Pending != "Look at main.go." {
		t.Fatalf("next run's guidance = %+v, want the carried text pending", st.Guidance)
	}
}

func TestGuidanceInTheContinueAsNewTaskReachesTheNextRound(t *testing.T) {
	limits := testLimits()
	limits.RoundsPerRun = 2
	s := &script{reports: map[int]report.Report{3: completeReport(3)}}
	env := newEnv(t, limits, s)
	signalWithRound(env, s, 2, map[string]any{SignalGuide: GuideRequest{Text: "Keep the tests."}})
	env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it"}`), (*Continuation)(nil))
	cont := decodeContinuation(t, env.GetWorkflowError())
	if cont.StopRequested || cont.Guidance != "Keep the tests." {
		t.Fatalf("continuation: stop %v, guidance %q; want only the guidance carried", cont.StopRequested, cont.Guidance)
	}
	env2 := newEnv(t, activities.Limits{}, s)
	env2.SetContinuedExecutionRunID("run-1")
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	if err := env2.GetWorkflowError(); err != nil {
		t.Fatalf("next run failed: %v", err)
	}
	got := guidanceOf(s)
	if want := []string{"", "", "Keep the tests."}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("round inputs' guidance = %q, want %q", got, want)
	}
}

// A round waiting out a provider limit already carries its guidance; when
// the run continues as new during the wait, the next run's rerun of that
// round gets it again, with what was sent during the wait after it.
func TestWaitingRoundsGuidanceCrossesContinueAsNew(t *testing.T) {
	s := &script{deferrals: map[int][]activities.Deferred{2: {{Reason: activities.DeferQuota}}}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	sendUpdate(env, 5*time.Second, UpdateGuide, GuideRequest{Text: "Fix the lexer first."})
	sendUpdate(env, 20*time.Minute, UpdateGuide, GuideRequest{Text: "Keep the tests."})
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 30*time.Minute)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	cont := continuation(t, err)
	if got := guidanceOf(s); len(got) != 2 || got[1] != "Fix the lexer first." {
		t.Fatalf("round inputs' guidance = %q, want the deferred round 2 to carry the first guidance", got)
	}
	if want := "Fix the lexer first.\n\nKeep the tests."; cont.NextRound != 2 || cont.Deferrals != 1 || cont.Guidance != want {
		t.Fatalf("continuation: next round %d, deferrals %d, guidance %q; want round 2's guidance and the new one, %q",
			cont.NextRound, cont.Deferrals, cont.Guidance, want)
	}
}
