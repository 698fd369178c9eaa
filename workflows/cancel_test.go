package workflows

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/usage"
)

// A cancelled round's CanceledError carries what it spent (RunRound puts it
// there); the run counts it. The SDK's test environment drops a cancelled
// activity's details, so the real stack checks the whole path
// (devenv/integration TestRealStackCancelledRoundUsageCounts).
func TestCancelledUsage(t *testing.T) {
	spent := usage.Usage{ModelCalls: 4, ToolCalls: 2, PromptTokens: 4000, CompletionTokens: 300}
	for _, tc := range []struct {
		err  error
		want usage.Usage
	}{
		{temporal.NewCanceledError(activities.FailureDetails{SessionID: "s", Usage: spent}), spent},
		{temporal.NewCanceledError(), usage.Usage{}},
		{errors.New("not a cancel"), usage.Usage{}},
	} {
		if got := cancelledUsage(tc.err); got != tc.want {
			t.Errorf("cancelledUsage(%v) = %+v, want %+v", tc.err, got, tc.want)
		}
	}
}
