package campaign

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/workflows"
)

// Loops outlive a run (SPEC 39, CampaignNoDrain): a campaign continues as
// new without waiting for its running loops. They are started abandoned
// (ParentClosePolicy ABANDON) and each tells the campaign's current run how
// it ended (workflows.SignalTaskEnded); the continuation carries them
// running, with their share of the budget, and the new run counts them
// against maxParallel without a child future.
const (
	// firstLoopCheck and lastLoopCheck bound the backoff between checks of
	// the loops a run carried (watchCarried).
	firstLoopCheck = 2 * time.Minute
	lastLoopCheck  = 30 * time.Minute
)

// takeEnds applies every loop end that arrived (the main loop, a cancel
// and a continue-as-new take them, so none is lost at the move).
func (c *campaign) takeEnds(ctx workflow.Context) {
	for {
		var e workflows.TaskEnded
		if !c.ends.ReceiveAsync(&e) {
			return
		}
		c.endReported(ctx, e)
	}
}

// endReported ends a task's go once: the first of its loop's signal, its
// child future (runGo) and the check of a carried loop (loopClosed) to
// arrive; a report for another go than the task's current one is ignored.
func (c *campaign) endReported(ctx workflow.Context, e workflows.TaskEnded) {
	t := c.byID[e.Task]
	if t == nil || t.Phase != TaskRunning || t.Go != e.Go {
		workflow.GetLogger(ctx).Info("A loop's end for no running go of a task is ignored", "task", e.Task, "go", e.Go, "workflowId", e.WorkflowID)
		return
	}
	t.preparing, t.carried = false, false
	c.applyEnd(t, e)
	c.running--
	c.dirty = true
}

// moveDue: continue-as-new is suggested to a campaign that carries its
// running loops and its queue across it (CampaignNoDrain).
func (c *campaign) moveDue(ctx workflow.Context) bool {
	return c.limits.CampaignNoDrain && workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// mayMove: continue-as-new is due and nothing holds it: no go is being
// prepared, no stack is landing and no head recheck is pending (the queue
// takes no next stack meanwhile, and carries the rest); running loops
// never hold it. Checked on every workflow task, so the suggestion alone
// moves a campaign whose loops all run for hours.
func (c *campaign) mayMove(ctx workflow.Context) bool {
	return c.moveDue(ctx) && !c.merging && !c.recheck && !c.preparing()
}

// preparing: a task's go is being prepared (its loop not started yet); a
// continue-as-new waits for that, never for the loops.
func (c *campaign) preparing() bool {
	for _, t := range c.tasks {
		if t.Phase == TaskRunning && t.preparing {
			return true
		}
	}
	return false
}

// carriedLoops are the running loops an earlier run started.
func (c *campaign) carriedLoops() []*taskState {
	var out []*taskState
	for _, t := range c.tasks {
		if t.Phase == TaskRunning && t.carried {
			out = append(out, t)
		}
	}
	return out
}

// cancelCarried asks every loop an earlier run started to cancel (the
// loops this run started take the cancel through their child futures);
// their ends arrive as their reports or through watchCarried.
func (c *campaign) cancelCarried(ctx workflow.Context) {
	for _, t := range c.carriedLoops() {
		workflow.RequestCancelExternalWorkflow(ctx, t.WorkflowID, "")
	}
}

// watchCarried checks, with backoff, the loops this run carried, so that
// one that can no longer report (terminated by an operator, timed out, or
// on a worker that never reports) does not leave its task running for
// ever. A short CheckTaskLoops per check, not an activity waiting on each
// loop: a thousand carried loops would hold a thousand activity slots and
// pending activities for hours. It runs through a cancel (the campaign
// waits for its loops' ends then) on a disconnected context.
func (c *campaign) watchCarried(ctx workflow.Context) {
	if !c.limits.CampaignNoDrain || len(c.carriedLoops()) == 0 {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(dctx, func(ctx workflow.Context) {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: time.Minute, Summary: "check carried loops",
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 3},
		})
		for wait := firstLoopCheck; ; wait = min(2*wait, lastLoopCheck) {
			if len(c.carriedLoops()) > 0 {
				_ = workflow.Sleep(ctx, wait)
			}
			loops := c.carriedLoops()
			if len(loops) == 0 {
				return
			}
			in := activities.CheckTaskLoopsInput{}
			for _, t := range loops {
				in.WorkflowIDs = append(in.WorkflowIDs, t.WorkflowID)
			}
			var out activities.CheckTaskLoopsOutput
			if err := workflow.ExecuteActivity(actx, activities.CheckTaskLoopsName, in).Get(ctx, &out); err != nil {
				workflow.GetLogger(ctx).Warn("Checking the carried task loops failed; checking again later", "error", err)
				continue
			}
			c.takeEnds(ctx) // a loop's own report, delivered before it closed, comes first
			for _, end := range out.Ended {
				c.loopClosed(ctx, end)
			}
		}
	})
}

// loopClosed ends the go of a carried loop found closed without its report
// having arrived: a completed loop's recorded result, else the close.
func (c *campaign) loopClosed(ctx workflow.Context, end activities.TaskLoopEnd) {
	for _, t := range c.carriedLoops() {
		if t.WorkflowID != end.WorkflowID {
			continue
		}
		e := workflows.TaskEnded{Status: workflows.OutcomeFailed, Failure: "the loop's workflow ended " + end.Status + " without telling the campaign: " + end.Failure}
		var res workflows.Result
		switch {
		case end.Status == "completed" && json.Unmarshal(end.Result, &res) == nil:
			e = workflows.TaskEndOf(&res, nil)
		case end.Status == "canceled":
			e.Status = workflows.OutcomeCancelled
		}
		if end.RunUsage != nil {
			e.Usage = *end.RunUsage
		}
		e.Task, e.Go, e.WorkflowID = t.Task.ID, t.Go, t.WorkflowID
		c.endReported(ctx, e)
		return
	}
}
