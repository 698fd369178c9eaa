package campaign

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/workflows"
)

// Campaign notification events besides a run's (docs/operators.md).
const (
	EventMerged   = "merged"
	EventReturned = "returned"
	EventPaused   = "paused"
)

// notifyTask tells the deployment's receiver that a task merged or went
// back, when the recorded limits list the event. It never waits for the
// delivery; it goes through a detached child, as an end event does, since
// the campaign may close right after its last merge (an activity not yet
// started when its workflow closes never runs). Seq (the task's place in
// the list) and Round (its go, or its merge attempts) make each event's key
// and child its own.
func (c *campaign) notifyTask(ctx workflow.Context, event string, t *taskState) {
	if !slices.Contains(c.limits.NotifyEvents, event) {
		return
	}
	run := workflow.GetInfo(ctx).WorkflowExecution
	round, text := t.Go, fmt.Sprintf("Campaign %s: task %s merged into %s (%s)", run.ID, t.Task.ID, c.settings.Branch, shortCommit(t.MergeCommit))
	switch event {
	case EventReturned:
		round, text = t.MergeAttempts, fmt.Sprintf("Campaign %s: task %s did not merge and goes back to a new loop: %s", run.ID, t.Task.ID,
			activities.QuoteModelText(runes.Prefix(t.LastFailure, 300)))
	case workflows.EventAwaitingApproval:
		text = fmt.Sprintf("Campaign %s: task %s's merge passed the verify command and awaits approval (%s)", run.ID, t.Task.ID,
			activities.QuoteModelText(runes.Prefix(t.DiffStat, 200)))
	}
	in := activities.NotifyInput{Event: event, WorkflowID: run.ID, RunID: run.RunID, Round: round,
		Seq: slices.Index(c.tasks, t) + 1, Status: t.Phase, Text: text}
	notifyDetached(ctx, in)
}

// notifyEnd tells the receiver how the campaign ended (its result status
// as the event), from a detached child so the event outlives the campaign.
func (c *campaign) notifyEnd(ctx workflow.Context, status string) {
	if !slices.Contains(c.limits.NotifyEvents, status) {
		return
	}
	run := workflow.GetInfo(ctx).WorkflowExecution
	notifyDetached(ctx, activities.NotifyInput{Event: status, WorkflowID: run.ID, RunID: run.RunID, Status: status,
		Text: fmt.Sprintf("Campaign %s ended %s: %d of %d tasks merged into %s", run.ID, status, c.snapshot().Merged, len(c.tasks), c.settings.Branch)})
}

// notifyPaused tells the receiver the merge queue paused and why, from a
// detached child (Seq counts the pauses, so each has its own key).
func (c *campaign) notifyPaused(ctx workflow.Context) {
	if !slices.Contains(c.limits.NotifyEvents, EventPaused) {
		return
	}
	run := workflow.GetInfo(ctx).WorkflowExecution
	c.pauses++
	text := fmt.Sprintf("Campaign %s paused its merge queue: %s (resume it when fixed)", run.ID, runes.Prefix(c.pauseReason, 300))
	switch c.pauseReason {
	case PauseHeadRed:
		// The output is the repository's (and so the models'): quoted.
		text = fmt.Sprintf("Campaign %s paused its merge queue: head-red: the integration head fails the verify command on its own; its output ends: %s (resume checks the head again)",
			run.ID, activities.QuoteModelText(runes.Suffix(c.pauseOutput, 300)))
	case PauseGit:
		text = fmt.Sprintf("Campaign %s paused: git: %s (resume it when fixed)", run.ID, activities.QuoteModelText(runes.Prefix(c.pauseOutput, 300)))
	}
	notifyDetached(ctx, activities.NotifyInput{Event: EventPaused, WorkflowID: run.ID, RunID: run.RunID, Seq: c.pauses, Status: workflows.PhasePaused, Text: text})
}
