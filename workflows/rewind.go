package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/usage"
)

// SignalRewound tells a run reset by `starter rewind` what the run had spent
// before the reset. The starter sends it right after the reset (servers up to
// 1.29 refuse it as a post-reset operation), so the run counts it from the
// budget check after it lands (at the latest before the round after the
// first rewound one); a replay reads it from history, never from the starter.
const SignalRewound = "rewound"

// RewoundSignal is SignalRewound's payload: the run's usage before the
// reset (every round it ran, the killed one's heartbeats included), so
// tokens paid for the abandoned rounds still count against maxTokens.
type RewoundSignal struct {
	Round int         `json:"round"`
	Usage usage.Usage `json:"usage"`
}

// takeRewind applies a pending SignalRewound: the run's usage is at least
// what was spent before the reset. Runs without the signal (every history
// from before it) are unchanged.
func (l *loop) takeRewind(ctx workflow.Context) {
	var r RewoundSignal
	for workflow.GetSignalChannel(ctx, SignalRewound).ReceiveAsync(&r) {
		u := &l.usage
		u.ModelCalls = max(u.ModelCalls, r.Usage.ModelCalls)
		u.ToolCalls = max(u.ToolCalls, r.Usage.ToolCalls)
		u.PromptTokens = max(u.PromptTokens, r.Usage.PromptTokens)
		u.CompletionTokens = max(u.CompletionTokens, r.Usage.CompletionTokens)
	}
}

// resetRun: this run is a reset of another (starter rewind): its started
// event keeps the original run's id. Its rounds' first attempts restore the
// checkpoint they are handed whatever HEAD holds (RoundInput.Rewound); the
// rounds replayed from before the reset point never run again.
func resetRun(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.OriginalRunID != "" && info.OriginalRunID != info.WorkflowExecution.RunID
}
