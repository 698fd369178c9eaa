package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/usage"
)

// SignalRewound tells a run reset by `starter rewind` what the run had spent
// before the reset. The starter sends it as the reset's post-reset
// operation, so it is in the reset run's history before the reset run's
// first workflow task: the loop reads it before the next round is
// scheduled, and a replay reads it from history, never from the starter.
const SignalRewound = "rewound"

// RewoundSignal is SignalRewound's payload: the run's usage before the
// reset (every round it ran, the killed one's heartbeats included), so
// tokens paid for the abandoned rounds still count against maxTokens.
type RewoundSignal struct {
	Round int         `json:"round"`
	Usage usage.Usage `json:"usage"`
}

// takeRewind applies a pending SignalRewound: the run's usage is at least
// what was spent before the reset, and the next round's first attempt
// restores the checkpoint even when HEAD is already there (RoundInput.Rewound).
// Runs without the signal (every history from before it) are unchanged.
func (l *loop) takeRewind(ctx workflow.Context) {
	var r RewoundSignal
	for workflow.GetSignalChannel(ctx, SignalRewound).ReceiveAsync(&r) {
		u := &l.usage
		u.ModelCalls = max(u.ModelCalls, r.Usage.ModelCalls)
		u.ToolCalls = max(u.ToolCalls, r.Usage.ToolCalls)
		u.PromptTokens = max(u.PromptTokens, r.Usage.PromptTokens)
		u.CompletionTokens = max(u.CompletionTokens, r.Usage.CompletionTokens)
		l.rewound = true
	}
}
