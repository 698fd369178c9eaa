package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// reportTarget is the campaign a task loop tells how it ended: the one its
// TaskStart names when it asks (ReportEnd) and is the loop's parent (no
// caller can make a run signal another workflow), or what the loop's own
// continue-as-new carried.
func reportTarget(ctx workflow.Context, cont *Continuation, start *TaskStart) *TaskReportTo {
	if cont != nil {
		return cont.ReportEnd
	}
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if start == nil || !start.ReportEnd || parent == nil || parent.ID != start.Campaign {
		return nil
	}
	return &TaskReportTo{Campaign: start.Campaign, Task: start.Task, Go: start.Go}
}

// reportEnd tells the campaign how the loop ended, every way but its own
// continue-as-new: the campaign may have continued as new since it started
// the loop, so it learns the end by this signal to its workflow id (the
// current run). It waits until the signal is delivered, on a disconnected
// context so a cancelled loop reports too; the loop ends as it would if the
// campaign is gone.
func (l *loop) reportEnd(ctx workflow.Context, res *Result, err error) {
	if l.reportTo == nil || workflow.IsContinueAsNewError(err) {
		return
	}
	end := TaskEndOf(res, err)
	end.Task, end.Go, end.WorkflowID = l.reportTo.Task, l.reportTo.Go, workflow.GetInfo(ctx).WorkflowExecution.ID
	if err != nil && ctx.Err() != nil {
		end.Status = OutcomeCancelled // whatever error the cancel ended it with
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if serr := workflow.SignalExternalWorkflow(dctx, l.reportTo.Campaign, "", SignalTaskEnded, end).Get(dctx, nil); serr != nil {
		workflow.GetLogger(ctx).Warn("Telling the campaign the loop ended failed", "campaign", l.reportTo.Campaign, "error", serr)
	}
}

// TaskEndOf is what a loop's end tells its campaign (without the task, go
// and workflow id): a result's status, commit, rounds, usage, limit and
// blocker, or an error's failure and usage (cancelled when it is a cancel).
// The campaign reads a loop it holds the child future of the same way.
func TaskEndOf(res *Result, err error) TaskEnded {
	if err != nil {
		spent, whole := RunUsageOf(err)
		if !whole {
			spent = failedUsage(err)
		}
		e := TaskEnded{Status: OutcomeFailed, Usage: spent, Failure: runes.Prefix(err.Error(), MaxTaskEndedChars)}
		if temporal.IsCanceledError(err) {
			e.Status = OutcomeCancelled
		}
		return e
	}
	e := TaskEnded{Status: res.Status, Rounds: res.RoundsStarted, Usage: res.Usage, Limit: res.Limit}
	if res.Checkpoint != nil {
		e.Commit = res.Checkpoint.Commit
	}
	switch {
	case res.Report == nil:
		e.Blocker = "(no report)"
	case res.Report.Blocker != "":
		e.Blocker = runes.Prefix(res.Report.Blocker, MaxTaskEndedChars)
	default:
		e.Blocker = runes.Prefix(res.Report.Summary, MaxTaskEndedChars)
	}
	return e
}
