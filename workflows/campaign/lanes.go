package campaign

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/runes"
)

// lane is one prefix of the merge queue verified beside others (SPEC 41,
// mergeLanes > 1): its stack merged onto the previous lane's tip (onto, kept
// on ontoRef; the integration head for the front), its own tip kept on its
// ref, verified by a MergeTask of its own and landed by compare-and-swap
// once every lane before it landed.
type lane struct {
	n             int
	batch         []*taskState
	onto, ontoRef string
	merge         activities.MergeTaskOutput // the lane's merge step
	verify        activities.MergeTaskOutput // its verify step
	err           error
	merged, done  bool
	opened        time.Time
	started       time.Time // its verify's start
	took          time.Duration
	cancel        workflow.CancelFunc
}

// maxLaneTasksListed bounds each lane's task ids in the status summary
// (a lane of a mergeBatch stack holds up to 64).
const maxLaneTasksListed = 8

// Lane states in status.
const (
	laneMerging   = "merging"
	laneVerifying = "verifying"
	lanePassed    = "passed"
	laneRed       = "red"
	laneConflict  = "conflict"
	laneFailed    = "failed"
)

func (l *lane) ids() []string {
	ids := make([]string, len(l.batch))
	for i, t := range l.batch {
		ids[i] = t.Task.ID
	}
	return ids
}

// usable: the lane's merge gave a tip the next lane may stack onto.
func (l *lane) usable() bool {
	return l.merged && l.err == nil && (l.merge.Outcome == activities.MergeHeld || l.merge.Outcome == activities.MergeLanded)
}

// tip is the commit the next lane stacks onto and the ref keeping it (a
// lane with nothing to merge passes its own base on: none when that was
// the integration head, which the next lane then merges onto).
func (l *lane) tip(ref string) (string, string) {
	if l.merge.Outcome != activities.MergeLanded {
		return l.merge.Tip, ref
	}
	if l.ontoRef == "" {
		return "", ""
	}
	return l.onto, l.ontoRef
}

func (l *lane) state() string {
	switch {
	case !l.merged:
		return laneMerging
	case l.err != nil:
		return laneFailed
	case l.merge.Outcome == activities.MergeConflict || l.merge.Outcome == activities.MergeRefused:
		return laneConflict
	case l.merge.Outcome == activities.MergeLanded:
		return lanePassed
	case !l.done:
		return laneVerifying
	case l.verify.Outcome == activities.MergeRed:
		return laneRed
	}
	return lanePassed
}

func (c *campaign) laneRef(n int) string {
	return fmt.Sprintf("refs/ralph/campaigns/%s/lanes/%d", c.settings.ID, n)
}

// runLanes lands the queue through up to mergeLanes lanes at once, in queue
// order, until no lane is in flight and the queue is empty or paused.
func (c *campaign) runLanes(ctx workflow.Context) error {
	defer c.discardLanes(ctx, 0, "the campaign was cancelled") // only a cancel leaves lanes
	// A continue-as-new that is due (CampaignNoDrain) opens no lane: those
	// in flight settle, the rest of the queue is carried.
	open := func() bool { return c.canOpenLane() && !c.moveDue(ctx) }
	for len(c.lanes) > 0 || (c.queueReady() && !c.moveDue(ctx)) {
		if open() {
			c.openLane(ctx)
			continue
		}
		if i := c.redBehind(); i > 0 {
			c.discardLanes(ctx, i+1, fmt.Sprintf("lane %d before it failed the verify", c.lanes[i].n))
			continue
		}
		if err := workflow.Await(ctx, func() bool { return c.frontDone() || open() || c.redBehind() > 0 }); err != nil {
			return c.queueCancelled(ctx)
		}
		if c.frontDone() {
			if err := c.settleFront(ctx); err != nil {
				return err
			}
			c.dirty = true // dependents may start, a returned task goes again
		}
	}
	return nil
}

func (c *campaign) frontDone() bool { return len(c.lanes) > 0 && c.lanes[0].done }

// canOpenLane: a stack is queued, a lane is free and the last lane's merge
// gave a tip to stack onto whose verify is not red.
func (c *campaign) canOpenLane() bool {
	if len(c.lanes) >= c.settings.MergeLanes || !c.queueReady() {
		return false
	}
	if len(c.lanes) == 0 {
		return true
	}
	last := c.lanes[len(c.lanes)-1]
	return last.usable() && last.state() != laneRed
}

// redBehind is the index of the first lane behind the front whose verify
// came back red while lanes are stacked on it (0: none): those can never
// land, so they are discarded at once rather than verified to the end.
func (c *campaign) redBehind() int {
	for i, l := range c.lanes {
		if i > 0 && i < len(c.lanes)-1 && l.state() == laneRed {
			return i
		}
	}
	return 0
}

// openLane takes the next stack off the queue into a lane stacked on the
// last one and runs its merge and verify in a coroutine of its own.
func (c *campaign) openLane(ctx workflow.Context) {
	c.laneCount++
	l := &lane{n: c.laneCount, batch: c.nextBatch(), opened: workflow.Now(ctx)}
	if len(c.lanes) > 0 {
		prev := c.lanes[len(c.lanes)-1]
		l.onto, l.ontoRef = prev.tip(c.laneRef(prev.n))
	}
	c.lanes = append(c.lanes, l)
	lctx, cancel := workflow.WithCancel(ctx)
	l.cancel = cancel
	workflow.Go(lctx, func(ctx workflow.Context) { c.runLane(ctx, l) })
}

// runLane merges the lane's stack onto its base, keeps the tip on the
// lane's ref and verifies it; the driver lands or discards it.
func (c *campaign) runLane(ctx workflow.Context, l *lane) {
	defer func() { l.done = true }()
	ids := strings.Join(l.ids(), ", ")
	in := activities.MergeTaskInput{Line: c.line(), VerifyCommand: c.settings.VerifyCommand, Lane: activities.LaneMerge,
		Onto: l.onto, OntoRef: l.ontoRef, HoldRef: c.laneRef(l.n), TaskFaults: c.limits.CampaignTaskFaults}
	for _, t := range l.batch {
		in.Tasks = append(in.Tasks, c.taskRef(t))
		in.ProtectedPaths = appendNew(in.ProtectedPaths, c.protected(t)...)
	}
	summary := fmt.Sprintf("lane %d: merge %s", l.n, ids)
	l.err = workflow.ExecuteActivity(c.mergeOptions(ctx, summary), activities.MergeTaskName, in).Get(ctx, &l.merge)
	if l.onto == "" {
		l.onto = l.merge.Head // the front lane merged onto the head
	}
	l.merged = true
	if l.err != nil || l.merge.Outcome != activities.MergeHeld {
		return
	}
	in.Lane, in.Onto, in.OntoRef, in.Tip, in.TaskFaults = activities.LaneVerify, l.onto, "", l.merge.Tip, false
	l.started = workflow.Now(ctx)
	summary = fmt.Sprintf("lane %d: verify %s", l.n, ids)
	l.err = workflow.ExecuteActivity(c.mergeOptions(ctx, summary), activities.MergeTaskName, in).Get(ctx, &l.verify)
	l.took = workflow.Now(ctx).Sub(l.started)
}

// settleFront lands the front lane when it passed, else discards the lanes
// stacked on it and settles it as one lane would: a conflict sends its
// task back, a red verify sends back or bisects, a failed step merges the
// stack again alone (its retries and pause as ever).
func (c *campaign) settleFront(ctx workflow.Context) error {
	l := c.lanes[0]
	if l.merged && l.err == nil {
		// A task whose branch could not merge was left out of the lane's
		// stack: it goes back alone, as with one lane.
		l.batch, _ = c.leaveOut(ctx, l.batch, l.ids(), l.merge.Faults)
	}
	switch l.state() {
	case lanePassed:
		if l.merge.Outcome == activities.MergeLanded { // every task was there already
			c.popLane()
			c.merged(ctx, l.batch, l.merge)
			return nil
		}
		c.recordLaneVerify(ctx, l, "")
		return c.landLane(ctx, l)
	case laneConflict:
		c.discardLanes(ctx, 1, fmt.Sprintf("lane %d before it did not merge", l.n))
		c.popLane()
		return c.landWithout(ctx, l.batch, l.merge)
	case laneRed:
		c.recordLaneVerify(ctx, l, "")
		c.discardLanes(ctx, 1, fmt.Sprintf("lane %d before it failed the verify", l.n))
		c.popLane()
		out := l.merge
		out.Verification = l.verify.Verification
		return c.landRed(ctx, l.batch, out)
	}
	// A failed step: merged again alone, the L = 1 way.
	if ctx.Err() != nil {
		return c.queueCancelled(ctx)
	}
	if l.started.IsZero() {
		l.started = l.opened
	}
	c.recordLaneVerify(ctx, l, "its step failed: "+runes.Prefix(activityProblem(l.err), 300))
	c.discardLanes(ctx, 1, fmt.Sprintf("lane %d before it failed its step", l.n))
	c.popLane()
	return c.land(ctx, l.batch)
}

// landLane lands the front lane's verified tip onto the head it was merged
// onto; when the head moved meanwhile every lane is merged again.
func (c *campaign) landLane(ctx workflow.Context, l *lane) error {
	in := activities.MergeTaskInput{Line: c.line(), VerifyCommand: c.settings.VerifyCommand, HoldRef: c.laneRef(l.n),
		Land: l.merge.Tip, LandOn: l.onto}
	for _, t := range l.batch {
		in.Tasks = append(in.Tasks, c.taskRef(t))
	}
	var out activities.MergeTaskOutput
	err := workflow.ExecuteActivity(c.mergeOptions(ctx, fmt.Sprintf("lane %d: land %s", l.n, strings.Join(l.ids(), ", "))),
		activities.MergeTaskName, in).Get(ctx, &out)
	switch {
	case err != nil && ctx.Err() != nil:
		return c.queueCancelled(ctx)
	case err != nil:
		c.discardLanes(ctx, 1, fmt.Sprintf("lane %d before it failed to land", l.n))
		c.popLane()
		return c.land(ctx, l.batch)
	case out.Outcome == activities.MergeMoved:
		c.discardLanes(ctx, 1, "the integration head moved")
		c.popLane()
		c.requeue(l.batch)
		return nil
	}
	c.popLane()
	c.head = out.Head
	c.merged(ctx, l.batch, l.merge) // the merge step's commits, one a task
	return nil
}

// dropLanes ends a campaign that used lanes with one step deleting the
// lane refs its landings left (the last landed lane's; docs/git.md): none
// is in flight now. Its failure leaves them and the result stands.
func (c *campaign) dropLanes(ctx workflow.Context) {
	if !c.limits.CampaignDropLanes || c.laneCount == 0 {
		return
	}
	in := activities.MergeTaskInput{Line: c.line(), DropLanes: true}
	var out activities.MergeTaskOutput
	if err := workflow.ExecuteActivity(c.mergeOptions(ctx, "drop the lane refs"), activities.MergeTaskName, in).Get(ctx, &out); err != nil {
		workflow.GetLogger(ctx).Warn("The campaign's lane refs were not deleted", "error", err)
	}
}

// popLane takes the settled front lane off.
func (c *campaign) popLane() {
	c.lanes[0].cancel()
	c.lanes = c.lanes[1:]
}

// discardLanes throws away the lanes from index from on: their steps are
// cancelled, their verifies recorded as discarded with why, their stacks
// back at the queue's front in their order, to be verified again.
func (c *campaign) discardLanes(ctx workflow.Context, from int, why string) {
	if from >= len(c.lanes) {
		return
	}
	var back []*taskState
	for _, l := range c.lanes[from:] {
		l.cancel()
		c.recordLaneVerify(ctx, l, why)
		back = append(back, l.batch...)
	}
	c.lanes = c.lanes[:from]
	c.requeue(back)
}

// requeue puts stacks taken off the queue back at its front.
func (c *campaign) requeue(batch []*taskState) {
	ids := make([]string, len(batch))
	for i, t := range batch {
		t.Phase, ids[i] = TaskQueued, t.Task.ID
	}
	c.queue = append(ids, c.queue...)
}

// recordLaneVerify records a lane's verify: ended, or discarded with why
// (then its duration runs to now, or to its end when it had one).
func (c *campaign) recordLaneVerify(ctx workflow.Context, l *lane, why string) {
	v := MergeVerify{Tasks: l.ids(), Commit: l.merge.Tip, Lane: l.n, Discarded: why, Started: l.started, DurationMs: l.took.Milliseconds()}
	switch {
	case v.Started.IsZero():
		v.Started = l.opened // discarded before its verify began
	case !l.done:
		v.DurationMs = workflow.Now(ctx).Sub(l.started).Milliseconds() // discarded while verifying
	}
	if ver := l.verify.Verification; l.done && ver != nil {
		v.ExitCode, v.Passed = ver.ExitCode, ver.Passed()
	}
	c.recordVerify(v)
}

// laneStatus lists the lanes in flight, front first.
func (c *campaign) laneStatus() []LaneStatus {
	var out []LaneStatus
	for _, l := range c.lanes {
		ids := l.ids()
		out = append(out, LaneStatus{Lane: l.n, Tasks: ids[:min(len(ids), maxLaneTasksListed)], TaskCount: len(ids),
			Onto: l.onto, Tip: l.merge.Tip, State: l.state(), Started: l.started})
	}
	return out
}
