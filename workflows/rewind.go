package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/usage"
)

// SignalRewound tells a run reset by `starter rewind` what the run had spent
// before the reset. The starter sends it right after the reset (servers up to
// 1.29 refuse it as a post-reset operation), so the reset run waits for it
// (awaitRewound) before its first budget check; a replay reads it from
// history, never from the starter.
const SignalRewound = "rewound"

// RewoundSignal is SignalRewound's payload: the run's usage before the
// reset (every round it ran, the killed one's heartbeats included), so
// tokens paid for the abandoned rounds still count against maxTokens.
type RewoundSignal struct {
	Round int         `json:"round"`
	Usage usage.Usage `json:"usage"`
}

// takeRewind applies a pending SignalRewound. The signal carries what the
// run had spent when it was rewound to after round r; this run already
// counts what was spent up to r's end (usageAfter), so the difference (the
// abandoned rounds) is added once, whenever the signal lands: rounds run
// since the reset are not traded against it. Runs that took the signal
// before (no marker) keep the field-by-field maximum they applied; so does a
// signal whose round this run does not know.
func (l *loop) takeRewind(ctx workflow.Context) {
	var r RewoundSignal
	for workflow.GetSignalChannel(ctx, SignalRewound).ReceiveAsync(&r) {
		base, known := l.usageAfter[r.Round]
		if known && workflow.GetVersion(ctx, versionRewoundAdded, workflow.DefaultVersion, 1) >= 1 {
			l.usage = l.usage.Add(abandoned(r.Usage, base))
			continue
		}
		u := &l.usage
		u.ModelCalls = max(u.ModelCalls, r.Usage.ModelCalls)
		u.ToolCalls = max(u.ToolCalls, r.Usage.ToolCalls)
		u.PromptTokens = max(u.PromptTokens, r.Usage.PromptTokens)
		u.CompletionTokens = max(u.CompletionTokens, r.Usage.CompletionTokens)
		e, re := &u.Estimated, r.Usage.Estimated
		e.ModelCalls, e.PromptTokens = max(e.ModelCalls, re.ModelCalls), max(e.PromptTokens, re.PromptTokens)
		e.CompletionTokens = max(e.CompletionTokens, re.CompletionTokens)
	}
}

// abandoned is what was spent after base, by the time spent was counted
// (never negative).
func abandoned(spent, base usage.Usage) usage.Usage {
	return usage.Usage{
		ModelCalls:       max(spent.ModelCalls-base.ModelCalls, 0),
		ToolCalls:        max(spent.ToolCalls-base.ToolCalls, 0),
		PromptTokens:     max(spent.PromptTokens-base.PromptTokens, 0),
		CompletionTokens: max(spent.CompletionTokens-base.CompletionTokens, 0),
		Estimated: usage.Counts{
			ModelCalls:       max(spent.Estimated.ModelCalls-base.Estimated.ModelCalls, 0),
			PromptTokens:     max(spent.Estimated.PromptTokens-base.Estimated.PromptTokens, 0),
			CompletionTokens: max(spent.Estimated.CompletionTokens-base.Estimated.CompletionTokens, 0),
		},
	}
}

// resetRun: this run is a reset of another (starter rewind): its started
// event keeps the original run's id. Its rounds' first attempts restore the
// checkpoint they are handed whatever HEAD holds (RoundInput.Rewound); the
// rounds replayed from before the reset point never run again. A variable
// because the test environment cannot start a reset run: tests stand one in.
var resetRun = func(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.OriginalRunID != "" && info.OriginalRunID != info.WorkflowExecution.RunID
}

// rewoundWait bounds how long a reset run waits for SignalRewound: the
// starter sends it right after the reset, so it is normally there at once;
// a starter that died in between costs the run this much, once.
const rewoundWait = 10 * time.Second

// awaitRewound holds a reset run's first round check after the reset until
// SignalRewound is there (or rewoundWait passed), so that check counts what
// was spent before the reset instead of starting a round the budget no
// longer pays for.
//
// Which check is the first after the reset is told by a version marker:
// the reset run replays the rounds before the reset point from the run it
// reset, whose history holds no marker there, so GetVersion answers the
// default (no wait, as that run did); the first check after the point runs
// live and records the marker. GetVersion keeps its first answer per change
// id for the whole run, so the id names the round. Reset runs recorded
// before the wait hold no marker either and replay without it. A run waits
// once: a reset of a reset run that replays the first reset's wait does not
// wait again (its signal counts from the check after it lands, as before).
func (l *loop) awaitRewound(ctx workflow.Context, round int) error {
	if l.rewoundAwaited || !resetRun(ctx) {
		return nil
	}
	if workflow.GetVersion(ctx, rewoundWaitChange(round), workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	l.rewoundAwaited = true
	signal := workflow.GetSignalChannel(ctx, SignalRewound)
	if signal.Len() > 0 {
		return nil // already there: no timer (this SDK starts one even then)
	}
	_, err := awaitWithTimeout(ctx, rewoundWait, func() bool { return signal.Len() > 0 })
	return err
}

// rewoundWaitChange is versionRewoundWait's change id before round.
func rewoundWaitChange(round int) string {
	return fmt.Sprintf("%s-before-round-%d", versionRewoundWait, round)
}
