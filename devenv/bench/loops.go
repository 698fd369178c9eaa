package bench

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// The two loops the per-round benchmarks (overhead, encryption) compare:
// a bare workflow of no-op activities and a Ralph run whose model answers
// every round at once.

// loopRun is one measured loop: its round times from the server's events
// and the client's start → result time.
type loopRun struct {
	rounds RoundTimes
	e2e    time.Duration
}

// bareLoopRun runs the bare workflow of rounds no-op activities on t's
// queue (each heartbeating once when heartbeat); without timed it returns
// before reading the history.
func (h *Harness) bareLoopRun(ctx context.Context, t Target, queue string, rounds int, heartbeat, timed bool) (loopRun, error) {
	id := h.name("bare")
	start := time.Now()
	run, err := t.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 5 * time.Minute,
	}, BareWorkflowName, BareInput{Rounds: rounds, Heartbeat: heartbeat})
	if err != nil {
		return loopRun{}, err
	}
	firstRunID := run.GetRunID() // Get follows continue-as-new and moves GetRunID on
	var n int
	if err := run.Get(ctx, &n); err != nil {
		return loopRun{}, fmt.Errorf("bare run %s: %w", id, err)
	}
	out := loopRun{e2e: time.Since(start)}
	if !timed {
		return out, nil
	}
	chain, err := Chain(ctx, t, id, firstRunID)
	if err != nil {
		return loopRun{}, err
	}
	out.rounds = Timing(chain, NoopActivityName)
	return out, nil
}

// ralphLoop is how a Ralph loop is run: its objective, its input's budgets,
// and whether its payloads must be encrypted.
type ralphLoop struct {
	objective string
	budgets   bool // a token and a time budget, so their checks are part of the loop
	encrypted bool
}

// run runs one Ralph run of rounds on t's queue, checked to end
// budget-limited after all of them with payloads encrypted as l says;
// without timed it returns before reading the history.
func (l ralphLoop) run(ctx context.Context, h *Harness, t Target, queue string, rounds int, timed bool) (loopRun, error) {
	id := h.name("ralph")
	in := ralphInput{Objective: l.objective, MaxRounds: rounds}
	if l.budgets {
		in.MaxTokens, in.MaxMinutes = 1_000_000_000, 600
	}
	start := time.Now()
	run, err := StartRalph(ctx, t, queue, id, in)
	if err != nil {
		return loopRun{}, err
	}
	firstRunID := run.GetRunID()
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		return loopRun{}, fmt.Errorf("ralph run %s: %w", id, err)
	}
	out := loopRun{e2e: time.Since(start)}
	if res.Status != report.OutcomeBudgetLimited || res.RoundsStarted != rounds {
		return loopRun{}, fmt.Errorf("ralph run %s: result %+v, want budget-limited after %d rounds", id, res, rounds)
	}
	if !timed {
		return out, nil
	}
	chain, err := Chain(ctx, t, id, firstRunID)
	if err != nil {
		return loopRun{}, err
	}
	if err := checkEncoding(chain, l.encrypted); err != nil {
		return loopRun{}, fmt.Errorf("ralph run %s: %w", id, err)
	}
	out.rounds = Timing(chain, activities.RunRoundName)
	if len(out.rounds.Scheduled) != rounds {
		return loopRun{}, fmt.Errorf("ralph run %s: %d rounds in history, want %d", id, len(out.rounds.Scheduled), rounds)
	}
	return out, nil
}
