// Package bench measures what Ralph costs beside the model: orchestration
// overhead per round against a bare activity loop on the same server, scale
// of one worker, cancellation latency, worker-crash recovery, prompt cost and
// history size. It runs the real stack (a Temporal server, the real worker
// binary or the worker's own registration in-process, real commands) against
// the scripted OpenAI-compatible server, so the model costs nothing.
//
// These are benchmarks, not timed tests: they report numbers and never fail
// on a slow machine. The program is cmd/ralphbench; scripts/bench.sh
// runs it. Nothing here runs under `go test` except the tiny stats test.
package bench

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Names of the bare baseline registered next to Ralph on the same worker.
const (
	BareWorkflowName = "BenchBareLoop"
	NoopActivityName = "BenchNoop"
)

// BareLoop runs n no-op activities one after the other with the same
// activity options shape as a Ralph round (start-to-close, heartbeat timeout,
// WaitForCancellation, retry policy), on the workflow's own task queue. It is
// the baseline of the orchestration-overhead benchmark: everything Ralph adds
// per round beyond "one activity per round" shows as the difference.
//
// With in.Heartbeat each no-op activity records one heartbeat first, as a
// Ralph round does when it starts: the variant attributes that part of
// Ralph's cost.
func BareLoop(ctx workflow.Context, in BareInput) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    5 * time.Second,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    3,
		},
	})
	done := 0
	for i := 1; i <= in.Rounds; i++ {
		var out int
		if err := workflow.ExecuteActivity(ctx, NoopActivityName, NoopInput{Step: i, Heartbeat: in.Heartbeat}).Get(ctx, &out); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// BareInput is BareLoop's input.
type BareInput struct {
	Rounds    int  `json:"rounds"`
	Heartbeat bool `json:"heartbeat"`
}

// NoopInput is Noop's input.
type NoopInput struct {
	Step      int  `json:"step"`
	Heartbeat bool `json:"heartbeat"`
}

// Noop returns its step: the cheapest possible activity (plus one heartbeat
// when asked).
func Noop(ctx context.Context, in NoopInput) (int, error) {
	if in.Heartbeat {
		activity.RecordHeartbeat(ctx, in.Step)
	}
	return in.Step, nil
}

// RegisterBare puts BareLoop and Noop on w under their bench names.
func RegisterBare(w worker.Registry) {
	// Pinned like Ralph's workflow: in-process workers are versioned.
	w.RegisterWorkflowWithOptions(BareLoop, workflow.RegisterOptions{Name: BareWorkflowName,
		VersioningBehavior: workflow.VersioningBehaviorPinned})
	w.RegisterActivityWithOptions(Noop, activity.RegisterOptions{Name: NoopActivityName})
}
