package campaign

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/runes"
)

// What the merge queue pauses itself for (status pauseReason, SPEC 39): a
// git step that kept failing for RALPH_MERGE_RETRY_MINUTES, or an
// integration head that fails the verify command on its own. pauseOutput
// says more: the step's error, or the head's verify output.
const (
	PauseGit     = "git"
	PauseHeadRed = "head-red"
	// PauseOperator is status's name for an operator's pause (the pause
	// update); the queue's own reasons above win when both hold.
	PauseOperator = "operator"
)

// maxPauseOutput cuts pauseOutput (a verify output keeps its end).
const maxPauseOutput = 2000

// leaveOut sends back, alone, each task the merge step left out of the
// stack (its branch missing or no longer holding its commit), counting a
// merge attempt, and returns the rest of the batch (whose outcome the
// step's is) and its ids: batch and ids as they were when no task was left
// out (or CampaignTaskFaults is off: then the step asked for no faults).
func (c *campaign) leaveOut(ctx workflow.Context, batch []*taskState, ids []string, faults []activities.TaskFault) ([]*taskState, []string) {
	if len(faults) == 0 || !c.limits.CampaignTaskFaults {
		return batch, ids
	}
	why := map[string]string{}
	for _, f := range faults {
		why[f.ID] = f.Reason
	}
	rest, ids := make([]*taskState, 0, len(batch)), make([]string, 0, len(ids))
	for _, t := range batch {
		reason, faulted := why[t.Task.ID]
		if !faulted {
			rest, ids = append(rest, t), append(ids, t.Task.ID)
			continue
		}
		c.sendBack(ctx, t, "the task's branch could not merge into "+c.settings.Branch+": "+reason+
			"; the next go starts from what its branch holds now")
	}
	return rest, ids
}

// headRedOn: a single task's red merge is checked against the head alone
// (CampaignHeadRed, with the queue beside the main loop: its coroutine is
// what checks the head again on resume).
func (c *campaign) headRedOn() bool {
	return c.limits.CampaignHeadRed && c.limits.CampaignQueueApart
}

// headRed verifies the integration head alone after task t's merge failed
// the verify command (out). A red head is nobody's task: t goes back to the
// queue's front with no merge attempt charged, and the queue pauses
// (head-red) until resume finds the head green. paused is false when the
// head passed (the red merge is t's) or could not be checked for a reason
// that is the tasks'. out is the red merge's answer (the head is read again
// by the check, so a merge verified on another base — a speculative lane's
// — is judged against the head all the same).
func (c *campaign) headRed(ctx workflow.Context, t *taskState, _ activities.MergeTaskOutput) (paused bool, err error) {
	head, err := c.verifyHead(ctx, c.protected(t))
	switch {
	case ctx.Err() != nil:
		return false, c.queueCancelled(ctx)
	case err != nil && c.limits.MergeRetryMinutes > 0 && !tasksFault(err):
		c.holdStep(ctx, []*taskState{t}, "verifying the integration head", err) // t waits at the front
		return true, nil
	case err != nil || head.Outcome != activities.MergeRed:
		return false, nil
	}
	t.Phase = TaskQueued
	c.queue = append([]string{t.Task.ID}, c.queue...)
	c.pauseReason, c.pauseOutput = PauseHeadRed, runes.Suffix(head.Verification.Output, maxPauseOutput)
	c.upsert(ctx)
	c.notifyPaused(ctx)
	return true, nil
}

// verifyHead runs the verify command on the integration head alone, as on
// a merged tip (the sandbox, protected paths), and records the verify.
func (c *campaign) verifyHead(ctx workflow.Context, protected []string) (activities.MergeTaskOutput, error) {
	in := activities.MergeTaskInput{Line: c.line(), VerifyCommand: c.settings.VerifyCommand, VerifyHead: true, ProtectedPaths: protected}
	var out activities.MergeTaskOutput
	started := workflow.Now(ctx)
	if err := workflow.ExecuteActivity(c.mergeOptions(ctx, "verify the integration head"), activities.MergeTaskName, in).Get(ctx, &out); err != nil {
		return out, err
	}
	if out.Verification == nil {
		return out, temporal.NewNonRetryableApplicationError("the head's verify returned no verification", activities.ErrTypeCampaignGit, nil)
	}
	c.recordVerify(MergeVerify{Tasks: []string{}, Commit: out.Head, ExitCode: out.Verification.ExitCode, Passed: out.Verification.Passed(),
		Started: started, DurationMs: workflow.Now(ctx).Sub(started).Milliseconds()})
	return out, nil
}

// recheckHead is resume's answer to a head-red pause, run by the queue:
// the head is verified again; green, the queue goes on; still red, it stays
// paused and notifies again (the resume was accepted before the check ran,
// so the notification is how the operator learns its answer).
func (c *campaign) recheckHead(ctx workflow.Context) error {
	defer func() { c.recheck = false }()
	protected := c.settings.ProtectedPaths
	if len(c.queue) > 0 {
		protected = c.protected(c.byID[c.queue[0]]) // the task the red head held back
	}
	head, err := c.verifyHead(ctx, protected)
	switch {
	case ctx.Err() != nil:
		return c.queueCancelled(ctx)
	case err != nil:
		c.pauseGit(ctx, "checking the integration head", err)
	case head.Outcome == activities.MergeRed:
		c.pauseOutput = runes.Suffix(head.Verification.Output, maxPauseOutput)
		c.upsert(ctx)
		c.notifyPaused(ctx)
	default:
		c.pauseReason, c.pauseOutput = "", ""
		c.upsert(ctx)
	}
	return nil
}

// pauseGit pauses the queue, and the starting of loops, after the git step
// named kept failing for RALPH_MERGE_RETRY_MINUTES for a reason that is not
// the tasks'. A pause already held for git is not notified again (several
// preparations may fail together).
func (c *campaign) pauseGit(ctx workflow.Context, step string, err error) {
	if !c.limits.CampaignGitBound {
		// As recorded before CampaignGitBound: the reason holds the error.
		c.paused, c.pauseReason = true, "git: the merge step kept failing for "+fmt.Sprint(c.limits.MergeRetryMinutes)+" minutes: "+runes.Prefix(activityProblem(err), 1000)
		c.upsert(ctx)
		c.notifyPaused(ctx)
		return
	}
	again := c.paused && c.pauseReason == PauseGit
	c.paused, c.pauseReason = true, PauseGit
	c.pauseOutput = runes.Prefix(fmt.Sprintf("%s kept failing for %d minutes (RALPH_MERGE_RETRY_MINUTES): %s",
		step, c.limits.MergeRetryMinutes, activityProblem(err)), maxPauseOutput)
	c.upsert(ctx)
	if !again {
		c.notifyPaused(ctx)
	}
}

// prepareOptions are PrepareTask's: bounded like a merge step under
// CampaignGitBound, else retried without end as before.
func (c *campaign) prepareOptions(ctx workflow.Context, summary string) workflow.Context {
	if c.limits.CampaignGitBound {
		return c.mergeOptions(ctx, summary)
	}
	return c.gitOptions(ctx, summary)
}

// prepareHeldError: a task's preparation kept failing on git for the bound
// (CampaignGitBound), a failure that is not the task's.
type prepareHeldError struct{ err error }

func (e *prepareHeldError) Error() string { return "preparing the task kept failing: " + e.err.Error() }
func (e *prepareHeldError) Unwrap() error { return e.err }

// prepareFailed says what a failed PrepareTask is: the task's (the step
// refused what it was given, or its tree) fails the task as before; a
// failure that outlasted the retry bound holds the campaign instead.
func (c *campaign) prepareFailed(ctx workflow.Context, err error) error {
	if !c.limits.CampaignGitBound || ctx.Err() != nil || c.limits.MergeRetryMinutes <= 0 {
		return err
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && (app.NonRetryable() || app.Type() == activities.ErrTypeCampaignGit ||
		app.Type() == activities.ErrTypeBadRoundInput || app.Type() == activities.ErrTypeTaskTree) {
		return err
	}
	return &prepareHeldError{err: err}
}

// prepareHeld puts a task whose preparation was held back where it was
// before its go began (its go number, phase and evidence), so resume
// starts the same go again, and pauses the campaign; false for any other
// end of a go.
func (c *campaign) prepareHeld(ctx workflow.Context, t *taskState, was string, evidence []string, err error) bool {
	var held *prepareHeldError
	if !errors.As(err, &held) {
		return false
	}
	t.Phase, t.Go, t.Evidence, t.preparing, t.share = was, t.Go-1, evidence, false, 0
	t.WorkflowID = workflowID(c.settings.ID, t)
	c.pauseGit(ctx, "preparing task "+t.Task.ID, held.err)
	return true
}
