package activities

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/usage"
)

// The catch-all failures of a round (disk, harness) stay retryable and carry
// what the attempts spent, so a last attempt that fails that way does not
// drop the usage from the run.
func TestCatchAllFailuresCarryUsage(t *testing.T) {
	details := FailureDetails{SessionID: "s1", Usage: usage.Usage{ModelCalls: 4, PromptTokens: 70}}
	a := &Activities{}
	for name, err := range map[string]error{
		"roundError": a.roundError(context.Background(), errors.New("disk full"), 3, details),
		"setupError": setupError(context.Background(), errors.New("open the workspace root: permission denied"), details),
	} {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != ErrTypeRoundError || appErr.NonRetryable() {
			t.Fatalf("%s: %v, want a retryable %s", name, err, ErrTypeRoundError)
		}
		var got FailureDetails
		if err := appErr.Details(&got); err != nil || got != details {
			t.Fatalf("%s details = %+v (%v), want %+v", name, got, err, details)
		}
	}
	// A cancel stays a cancel.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := setupError(ctx, errors.New("lock"), details); !errors.Is(err, context.Canceled) {
		t.Fatalf("setupError after cancel = %v", err)
	}
}
