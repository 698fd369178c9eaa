package workflows

import (
	"testing"
	"time"

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
