package workflows

import (
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
)

// NotifyWorkflowName delivers a run's last event from a detached child: an
// activity still pending when its run closes never starts, so the end
// events outlive the run this way (docs/operators.md).
const NotifyWorkflowName = "RalphNotify"

// Notification events besides the result statuses (complete, blocked,
// failed, budget-limited, stopped).
const (
	EventWaiting          = "waiting"
	EventAwaitingApproval = "awaiting-approval"
)

// DefaultNotifyEvents is RALPH_NOTIFY_EVENTS's default.
const DefaultNotifyEvents = activities.DefaultNotifyEvents

// versionNotify guards the notification commands; runs recorded before them
// (no NotifyEvents in their limits) never reach it.
const versionNotify = "notify-events"

// Notify retries for up to an hour; one POST is short.
const (
	notifyStartToClose    = 30 * time.Second
	notifyScheduleToClose = time.Hour
)

func notifyOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    notifyStartToClose,
		ScheduleToCloseTimeout: notifyScheduleToClose,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
			MaximumInterval: time.Minute},
	}
}

// RalphNotify runs the Notify activity for one event; its parent has
// closed or goes on without it.
func RalphNotify(ctx workflow.Context, in activities.NotifyInput) error {
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, notifyOptions()), activities.NotifyName, in).Get(ctx, nil)
}

// notify tells the deployment's receiver about event at round, when the
// recorded limits list it. It never waits for the delivery: the run is
// neither delayed nor failed by it. An end event (final) goes through a
// detached child whose start the run waits for (a server round trip, not
// the receiver), so it is not lost when the run closes.
func (l *loop) notify(ctx workflow.Context, event string, round, seq int, final bool) {
	if !slices.Contains(l.limits.NotifyEvents, event) ||
		workflow.GetVersion(ctx, versionNotify, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	run := workflow.GetInfo(ctx).WorkflowExecution
	in := activities.NotifyInput{Event: event, WorkflowID: run.ID, RunID: run.RunID, Round: round, Seq: seq,
		Status: l.status.Phase, Text: notifyText(run.ID, event, round, l.maxRounds)}
	if final {
		in.Status = l.status.Outcome
	}
	if !final {
		workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, notifyOptions()), activities.NotifyName, in)
		return
	}
	notifyDetached(ctx, in)
}

// notifyDetached delivers an event from a detached child whose start the
// caller waits for (a server round trip, never the receiver), so the event
// outlives a run that closes right after it.
func notifyDetached(ctx workflow.Context, in activities.NotifyInput) {
	// Disconnected and never cancelled: the SDK asks the server to cancel a
	// started child whose context is cancelled, which cut an event sent
	// while the parent goes on (a campaign's merged) to its first attempt;
	// an operator's cancel of the run must not reach it either. Histories
	// recorded before the change cancelled it on return, and replay so.
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	if workflow.GetVersion(dctx, versionNotifyNotCancelled, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		defer cancel()
	}
	// Recorded, so a replay under another workflow id issues the same command.
	var childID string
	if err := workflow.SideEffect(dctx, func(workflow.Context) any {
		if in.Seq > 0 {
			return fmt.Sprintf("%s/notify/%s/%d/%d", in.WorkflowID, in.Event, in.Round, in.Seq)
		}
		return fmt.Sprintf("%s/notify/%s/%d", in.WorkflowID, in.Event, in.Round)
	}).Get(&childID); err != nil {
		workflow.GetLogger(ctx).Warn("Notification not started", "event", in.Event, "error", err)
		return
	}
	cctx := workflow.WithChildOptions(dctx, workflow.ChildWorkflowOptions{
		WorkflowID:        childID,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	child := workflow.ExecuteChildWorkflow(cctx, NotifyWorkflowName, in)
	if err := child.GetChildWorkflowExecution().Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("Notification not started", "event", in.Event, "error", err)
	}
}

// notifyText is the one line a person reads.
func notifyText(id, event string, round, maxRounds int) string {
	switch event {
	case EventAwaitingApproval:
		return fmt.Sprintf("Ralph run %s awaits approval after round %d of %d: approve or reject it", id, round, maxRounds)
	case EventWaiting:
		return fmt.Sprintf("Ralph run %s waits on the model provider before round %d of %d", id, round, maxRounds)
	}
	return fmt.Sprintf("Ralph run %s ended %s after %d round(s)", id, event, round)
}
