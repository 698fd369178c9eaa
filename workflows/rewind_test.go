package workflows

import (
	"reflect"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// What a rewound run spent before its reset (SignalRewound) stays in its
// usage and its token budget.
func TestRewoundSignalKeepsWhatWasSpent(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Minute)
	spent := usage.Usage{ModelCalls: 9, ToolCalls: 20, PromptTokens: 800, CompletionTokens: 100}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalRewound, RewoundSignal{Round: 1, Usage: spent})
	}, 5*time.Minute)
	res, err := execute(t, env, `{"objective":"fix it","maxRounds":3,"maxTokens":100000}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.inputs) != 3 {
		t.Fatalf("%d rounds", len(s.inputs))
	}
	for _, in := range s.inputs {
		if in.Rewound {
			t.Fatalf("round %d of a run that was not reset was told it was rewound", in.Round)
		}
	}
	if got := s.inputs[1].TokenBudget; got != 100000-900 {
		t.Fatalf("round 2's token budget = %d, want %d (what was spent before the reset counts)", got, 100000-900)
	}
	round := usage.Usage{ModelCalls: 2, ToolCalls: 3, PromptTokens: 100, CompletionTokens: 10}
	if want := spent.Add(round).Add(round); res.Usage != want {
		t.Fatalf("usage = %+v, want %+v", res.Usage, want)
	}
}

// asResetRun makes the test's run a reset run (the test environment cannot
// start one: its original run id is its own).
func asResetRun(t *testing.T) {
	t.Helper()
	real := resetRun
	resetRun = func(workflow.Context) bool { return true }
	t.Cleanup(func() { resetRun = real })
}

// A reset run whose pre-reset usage already spent its token budget does not
// start another round: its first round check waits for the rewound signal,
// which the starter sends just after the reset, here 3 s later.
func TestResetRunWaitsForTheRewoundSignalBeforeItsFirstRound(t *testing.T) {
	asResetRun(t)
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Minute)
	spent := usage.Usage{ModelCalls: 12, PromptTokens: 900, CompletionTokens: 100}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalRewound, RewoundSignal{Round: 2, Usage: spent})
	}, 3*time.Second)
	res, err := execute(t, env, `{"objective":"fix it","maxTokens":1000}`)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Status: report.OutcomeBudgetLimited, Limit: LimitTokens, RoundsStarted: 0, Usage: spent}
	if len(s.inputs) != 0 || *res != want {
		t.Fatalf("%d rounds, result %+v; want none and %+v", len(s.inputs), *res, want)
	}
}

// Without the signal (a starter that died after the reset) the reset run
// waits rewoundWait once, then goes on; its later rounds do not wait.
func TestResetRunWithoutTheSignalGoesOnAfterTheWait(t *testing.T) {
	asResetRun(t)
	s := &script{reports: map[int]report.Report{3: completeReport(3)}}
	env := newEnv(t, testLimits(), s)
	at := timedRounds(env, s)
	start := env.Now()
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result %+v, %v", res, err)
	}
	var offsets []time.Duration
	for _, a := range *at {
		offsets = append(offsets, a.Sub(start))
	}
	if want := []time.Duration{rewoundWait, rewoundWait, rewoundWait}; !reflect.DeepEqual(offsets, want) {
		t.Fatalf("rounds started at %v after the start, want %v", offsets, want)
	}
	for _, in := range s.inputs {
		if !in.Rewound {
			t.Fatalf("round %d of a reset run was not told it was rewound", in.Round)
		}
	}
}

// A rewind to after round 1 charges what the abandoned rounds spent exactly
// once, whether its signal lands during round 2 (the reset run's first
// round) or rounds later: rounds run since the reset are not traded
// against it (issue 42: a max() merge lost 110 of 495 tokens, or all 165).
func TestRewoundSpendIsAddedWheneverTheSignalLands(t *testing.T) {
	round := usage.Usage{ModelCalls: 2, ToolCalls: 3, PromptTokens: 100, CompletionTokens: 10}
	lost := usage.Usage{ModelCalls: 3, ToolCalls: 4, PromptTokens: 150, CompletionTokens: 15}
	for _, at := range []time.Duration{15 * time.Minute, 35 * time.Minute} {
		t.Run(at.String(), func(t *testing.T) {
			s := &script{}
			env := newEnv(t, testLimits(), s)
			slowRounds(env, s, 10*time.Minute)
			env.RegisterDelayedCallback(func() {
				// What the run had spent when rewound: round 1, then lost.
				env.SignalWorkflow(SignalRewound, RewoundSignal{Round: 1, Usage: round.Add(lost)})
			}, at)
			res, err := execute(t, env, `{"objective":"fix it","maxRounds":5,"maxTokens":100000}`)
			if err != nil {
				t.Fatal(err)
			}
			want := lost
			for range 5 {
				want = want.Add(round)
			}
			if res.Usage != want {
				t.Fatalf("usage = %+v, want %+v (5 rounds and the abandoned spend once)", res.Usage, want)
			}
		})
	}
}
