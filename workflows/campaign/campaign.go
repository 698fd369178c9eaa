package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// maxVerifiesKept bounds the merge queue's verify records: counts, and the
// last ones in full.
const maxVerifiesKept = 20

// Campaign is the workflow registered under CampaignWorkflowName: an entity
// that owns a task list and its merge queue. Each task's loop is an ordinary
// Ralph child run on its own branch; the merge is the MergeTask activity of
// the worker's own git; continue-as-new carries every task's state.
func Campaign(ctx workflow.Context, input json.RawMessage, cont *CampaignContinuation) (*CampaignResult, error) {
	c := &campaign{byID: map[string]*taskState{}, ends: workflow.GetSignalChannel(ctx, workflows.SignalTaskEnded)}
	if err := c.register(ctx); err != nil {
		return nil, err
	}
	if err := c.registerGuide(ctx); err != nil {
		return nil, err
	}
	var err error
	if cont != nil {
		err = c.resume(ctx, cont)
	} else {
		err = c.begin(ctx, input)
	}
	if err != nil {
		return nil, err
	}
	res, err := c.run(ctx)
	if err == nil && res != nil {
		c.dropLanes(ctx)
	}
	return res, err
}

// campaign is the state of one campaign run.
type campaign struct {
	limits   activities.Limits
	settings campaignSettings
	tasks    []*taskState
	byID     map[string]*taskState
	queue    []string // task ids in the order their loops completed
	head     string
	usage    usage.Usage
	budget   workflows.RunBudget
	paused   bool
	stopping bool
	finished string // the result status once finished
	verifies []MergeVerify
	// verifyCount and verifyFailed count every verify of the queue,
	// verifyDiscarded the lanes' verifies thrown away.
	verifyCount, verifyFailed, verifyDiscarded int
	// lanes are the speculative lanes in flight (mergeLanes > 1), front
	// first; laneCount numbers them.
	lanes     []*lane
	laneCount int
	// sources are the tasks files tasks were read from (taskState.Source).
	sources []activities.TasksSource
	// running counts the task loops (and their preparation) in flight;
	// dirty wakes the main loop; decisions are approve/reject answers.
	running   int
	dirty     bool
	decisions map[string]*decision
	limitHit  string
	// pauseReason holds the merge queue (a git step's failure that is not a
	// task's) until resume; pauses counts them for their notifications.
	pauseReason string
	pauses      int
	// pauseOutput says more of the pause (the head's verify output, the
	// git step's error); recheck: resume asked the queue to verify a red
	// head again (it stays paused until the head passes).
	pauseOutput string
	recheck     bool
	// holding counts the approval waits running beside the queue.
	holding int
	// merging: the queue's coroutine (CampaignQueueApart) is landing a
	// stack; the campaign finishes, continues as new or ends cancelled only
	// once it returned.
	merging bool
	// ends receives the loops' SignalTaskEnded (CampaignNoDrain, nodrain.go).
	ends workflow.ReceiveChannel
	wave waveState // a planning campaign's waves (waves.go)
}

type decision struct {
	approved bool
	reason   string
}

func (c *campaign) begin(ctx workflow.Context, input json.RawMessage) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: workflows.ResolveLimitsTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	if err := workflow.ExecuteLocalActivity(lctx, activities.ResolveLimitsName).Get(ctx, &c.limits); err != nil {
		return fmt.Errorf("resolve deployment limits: %w", err)
	}
	if err := checkLimits(c.limits); err != nil {
		return err
	}
	s, err := parseCampaignInput(input, c.limits, workflow.GetInfo(ctx).WorkflowExecution.ID)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), workflows.ErrTypeInvalidInput, nil)
	}
	c.settings = s.settings
	c.budget = workflows.NewRunBudget(s.maxTokens, s.maxMinutes, workflow.Now(ctx))
	if c.settings.TasksFile == "" {
		c.add(s.tasks, 0)
		return nil
	}
	tasks, source, err := c.readTasks(ctx, c.settings.TasksFile, fieldTasksFile)
	if err != nil {
		return err
	}
	c.add(tasks, source)
	return nil
}

// resume restores what a continue-as-new carried; only the campaign's own
// continue-as-new may pass it.
func (c *campaign) resume(ctx workflow.Context, k *CampaignContinuation) error {
	if workflow.GetInfo(ctx).ContinuedExecutionRunID == "" {
		return invalidInput("continuation: the second argument is accepted only from the campaign's own continue-as-new")
	}
	c.limits, c.settings, c.queue, c.head = k.Limits, k.Settings, k.Queue, k.Head
	c.usage, c.budget, c.paused, c.stopping, c.verifies = k.Usage, k.Budget, k.Paused, k.Stopping, k.Verifies
	c.verifyCount, c.verifyFailed, c.sources = k.VerifyCount, k.VerifyFailed, k.Sources
	c.pauseReason, c.pauses, c.pauseOutput = k.PauseReason, k.Pauses, k.PauseOutput
	c.laneCount, c.verifyDiscarded = k.LaneCount, k.VerifyDiscarded
	if k.Wave != nil {
		c.wave = *k.Wave
	}
	defer c.watchCarried(ctx)
	for i := range k.Tasks {
		t := &k.Tasks[i]
		t.WorkflowID = workflowID(c.settings.ID, t)
		c.tasks = append(c.tasks, t)
		c.byID[t.Task.ID] = t
		if t.Phase == TaskRunning { // its loop outlived the run that started it
			t.carried = true
			c.running++
		}
		if c.limits.CampaignHeldApart {
			switch {
			case t.Phase == TaskAwaitingApproval:
				c.startHolding(ctx, t) // its wait goes on in this run
			case t.Phase == TaskQueued && t.Held != "":
				t.approved = true
			}
		}
	}
	return nil
}

// add appends tasks, read from the tasks file numbered source (0: inline).
func (c *campaign) add(tasks []Task, source int) {
	for _, t := range tasks {
		s := &taskState{Task: t, Source: source, Phase: TaskWaiting}
		c.tasks = append(c.tasks, s)
		c.byID[t.ID] = s
	}
	c.dirty = true
}

func (c *campaign) run(ctx workflow.Context) (*CampaignResult, error) {
	c.upsert(ctx)
	if c.limits.CampaignQueueApart {
		c.startQueue(ctx)
	}
	for {
		if ctx.Err() != nil {
			return nil, c.cancelled(ctx)
		}
		c.takeEnds(ctx)
		c.blockOrphans()
		c.checkBudget(ctx)
		drain := workflow.GetInfo(ctx).GetContinueAsNewSuggested()
		if !drain {
			c.startReady(ctx)
		}
		if !c.limits.CampaignQueueApart { // else the queue's coroutine lands them
			if batch := c.nextBatch(); len(batch) > 0 {
				if err := c.land(ctx, batch); err != nil {
					return nil, err
				}
				continue
			}
		}
		if c.running == 0 && !c.queueBusy() {
			if c.allDone() && !c.planning() {
				return c.finish(ctx), nil
			}
			if c.allDone() {
				res, progressed, err := c.advance(ctx, drain)
				if res != nil || err != nil {
					return res, err
				}
				if progressed {
					continue
				}
			}
			if drain {
				return nil, c.continueAsNew(ctx)
			}
		}
		if c.mayMove(ctx) {
			return nil, c.continueAsNew(ctx) // the running loops go on
		}
		c.dirty = false
		if err := workflow.Await(ctx, func() bool { return c.dirty || c.ends.Len() > 0 || c.mayMove(ctx) }); err != nil {
			return nil, c.cancelled(ctx)
		}
	}
}

// allDone: nothing runs, nothing is queued, and nothing more will start
// (a pending task waits out a pause; a stop or a spent budget ends it).
func (c *campaign) allDone() bool {
	if len(c.queue) > 0 || c.holding > 0 || c.merging {
		return false
	}
	for _, t := range c.tasks {
		pending := t.Phase == TaskWaiting || t.Phase == TaskReturned
		if pending && !c.stopping && c.limitHit == "" {
			return false
		}
	}
	return true
}

// startable: the task may start a go now (dependencies merged, or a
// returned task).
func (c *campaign) startable(t *taskState) bool {
	switch t.Phase {
	case TaskReturned:
		return true
	case TaskWaiting:
		for _, d := range t.Task.DependsOn {
			if c.byID[d].Phase != TaskMerged {
				return false
			}
		}
		return true
	}
	return false
}

// blockOrphans blocks every waiting task whose dependency can no longer
// merge, naming that dependency.
func (c *campaign) blockOrphans() {
	for changed := true; changed; {
		changed = false
		for _, t := range c.tasks {
			if t.Phase != TaskWaiting {
				continue
			}
			for _, d := range t.Task.DependsOn {
				switch dep := c.byID[d]; dep.Phase {
				case TaskBlocked, TaskFailed, TaskCancelled:
					t.Phase, t.LastFailure = TaskBlocked, fmt.Sprintf("dependency %s ended %s", d, dep.Phase)
					changed = true
				}
				if t.Phase == TaskBlocked {
					break
				}
			}
		}
	}
}

func (c *campaign) checkBudget(ctx workflow.Context) {
	if c.limitHit == "" {
		c.limitHit = c.budget.Exhausted(c.usage, workflow.Now(ctx))
	}
}

func (c *campaign) startReady(ctx workflow.Context) {
	if c.paused || c.stopping || c.limitHit != "" {
		return
	}
	for _, t := range c.tasks {
		if c.running >= c.settings.MaxParallel {
			return
		}
		if c.startable(t) {
			c.startGo(ctx, t)
		}
	}
}

// startGo prepares the task's branch and runs its next loop as a child, in a
// coroutine of its own; the result comes back through the task's state.
func (c *campaign) startGo(ctx workflow.Context, t *taskState) {
	var back *report.Report
	if t.Phase == TaskReturned {
		back = c.backReport(t, t.LastFailure)
	}
	was, evidence := t.Phase, t.Evidence // restored when git holds the go back
	t.Evidence = nil                     // the back report lives only until the go it starts
	t.Go++
	t.Phase, t.Round = TaskRunning, 0
	t.WorkflowID = workflowID(c.settings.ID, t)
	t.preparing, t.share = true, 0
	if left := c.budget.TokensLeft(c.usage); left > 0 && c.limits.CampaignShares {
		t.share = c.share(left) // reserved now, with the loops starting beside it
	}
	t.carried = false
	c.running++
	n := t.Go
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { c.dirty = true }()
		res, err := c.runGo(ctx, t, back)
		if t.Phase != TaskRunning || t.Go != n {
			return // the loop's own report ended the go first
		}
		defer func() { c.running-- }()
		if c.prepareHeld(ctx, t, was, evidence, err) {
			return
		}
		c.goEnded(ctx, t, res, err)
	})
}

func (c *campaign) line() activities.CampaignLine {
	return activities.CampaignLine{Campaign: c.settings.ID, Branch: c.settings.Branch, Base: c.settings.Base}
}

func (c *campaign) taskRef(t *taskState) activities.CampaignTask {
	return activities.CampaignTask{ID: t.Task.ID, Workspace: activities.TaskWorkspace(c.settings.ID, t.Task.ID), Commit: t.Commit, Go: t.Go}
}

func (c *campaign) gitOptions(ctx workflow.Context, summary string) workflow.Context {
	heartbeat := time.Minute
	if c.limits.CampaignGitHeartbeat && c.limits.HeartbeatTimeoutSeconds > 0 {
		heartbeat = time.Duration(c.limits.HeartbeatTimeoutSeconds) * time.Second
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    heartbeat,
		Summary:             summary,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeCampaignGit, activities.ErrTypeBadRoundInput},
		},
	})
}

func (c *campaign) runGo(ctx workflow.Context, t *taskState, back *report.Report) (*workflows.Result, error) {
	var prep activities.PrepareTaskOutput
	in := activities.PrepareTaskInput{Line: c.line(), Task: c.taskRef(t)}
	if t.Source > 0 {
		in.From = &c.sources[t.Source-1]
	}
	if err := workflow.ExecuteActivity(c.prepareOptions(ctx, "prepare "+t.Task.ID), activities.PrepareTaskName, in).Get(ctx, &prep); err != nil {
		return nil, c.prepareFailed(ctx, err)
	}
	objective := t.Task.Objective
	if prep.Task != nil {
		objective = prep.Task.Objective
	}
	if c.head == "" {
		c.head = prep.IntegrationHead // what the campaign starts from, not a move
	}
	if c.stopping {
		t.preparing = false
		return nil, errStoppedBeforeStart
	}
	if c.limits.CampaignShares && c.budget.Exhausted(c.usage, workflow.Now(ctx)) != "" {
		t.preparing = false
		return nil, errBudgetBeforeStart
	}
	if len(prep.Conflicts) > 0 && back != nil {
		back.NextSteps = append([]string{"Resolve the conflict markers committed in " + strings.Join(prep.Conflicts, ", ") +
			" keeping both this task's intent and what the integration branch holds."}, back.NextSteps...)
	}
	start := &workflows.TaskStart{Campaign: c.settings.ID, PreviousReport: back, CampaignObjective: c.settings.Objective}
	policy := enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL
	if c.limits.CampaignNoDrain {
		// The loop outlives this run's continue-as-new and tells whichever
		// run is current how it ended.
		policy = enumspb.PARENT_CLOSE_POLICY_ABANDON
		start.ReportEnd, start.Task, start.Go = true, t.Task.ID, t.Go
	}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          t.WorkflowID,
		ParentClosePolicy:   policy,
		WaitForCancellation: true,
		StaticSummary:       "campaign " + c.settings.ID + ": task " + t.Task.ID,
	}
	if c.limits.SearchAttributes {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrCampaign).ValueSet(c.settings.ID))
	}
	var res workflows.Result
	child := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), workflows.WorkflowName, c.childInput(ctx, t, objective),
		nil, start)
	if child.GetChildWorkflowExecution().Get(ctx, nil) == nil {
		c.deliverKept(ctx, t, child)
	}
	t.preparing = false
	if err := child.Get(ctx, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// errStoppedBeforeStart: a stop arrived while the task's go was prepared,
// so its loop never started.
var errStoppedBeforeStart = errors.New("stopped before its loop started")

// errBudgetBeforeStart: the budget was spent while the task's go was
// prepared, so its loop never started.
var errBudgetBeforeStart = errors.New("the budget was spent before its loop started")

// deliverKept sends the started loop what operators sent while it was
// prepared (its workflow did not exist yet): guidance, then a stop.
func (c *campaign) deliverKept(ctx workflow.Context, t *taskState, child workflow.ChildWorkflowFuture) {
	t.preparing = false
	for _, text := range t.keptGuidance {
		child.SignalChildWorkflow(ctx, workflows.SignalGuide, workflows.GuideRequest{Text: text})
	}
	t.keptGuidance = nil
	if t.keptStop != nil {
		child.SignalChildWorkflow(ctx, workflows.SignalStop, *t.keptStop)
		t.keptStop = nil
	}
}

// childInput is the task loop's input, as a caller would send it: the
// task's objective (read when the go starts) on its workspace, its verify
// command and protected paths, and what is left of the campaign's budget
// as its ceiling.
func (c *campaign) childInput(ctx workflow.Context, t *taskState, objective string) json.RawMessage {
	in := map[string]any{
		fieldObjective:     objective,
		fieldWorkspace:     activities.TaskWorkspace(c.settings.ID, t.Task.ID),
		fieldVerifyCommand: c.settings.VerifyCommand,
	}
	if t.Task.VerifyCommand != "" {
		in[fieldVerifyCommand] = t.Task.VerifyCommand
	}
	if t.Task.MaxRounds != nil {
		in[fieldMaxRounds] = *t.Task.MaxRounds
	}
	if protected := c.protected(t); len(protected) > 0 {
		in[fieldProtected] = protected
	}
	if t.share > 0 {
		in[fieldMaxTokens] = t.share
	} else if left := c.budget.TokensLeft(c.usage); left > 0 {
		in[fieldMaxTokens] = left
	}
	if !c.budget.Deadline.IsZero() {
		in[fieldMaxMinutes] = max(int(c.budget.Deadline.Sub(workflow.Now(ctx))/time.Minute), 1)
	}
	raw, _ := json.Marshal(in) // a map of strings and ints always encodes
	return raw
}

// goEnded records what a task's loop came to.
func (c *campaign) goEnded(ctx workflow.Context, t *taskState, res *workflows.Result, err error) {
	switch {
	case errors.Is(err, errStoppedBeforeStart):
		t.Phase, t.LastFailure = TaskCancelled, "the campaign was stopped before the task's loop started"
		return
	case errors.Is(err, errBudgetBeforeStart):
		t.Phase, t.LastFailure = TaskCancelled, "the campaign's budget was spent before the task's loop started"
		return
	}
	end := workflows.TaskEndOf(res, err)
	if err != nil && ctx.Err() != nil {
		end.Status = workflows.OutcomeCancelled
	}
	c.applyEnd(t, end)
}

// applyEnd records what a task's loop came to, told by the loop's child
// future or by the loop itself (SignalTaskEnded): its usage, then its phase.
// An error end (failed, cancelled) carries the whole run's usage where the
// loop's error held it, else the failed round's.
func (c *campaign) applyEnd(t *taskState, e workflows.TaskEnded) {
	t.Usage, c.usage = t.Usage.Add(e.Usage), c.usage.Add(e.Usage)
	switch e.Status {
	case workflows.OutcomeCancelled:
		t.Phase, t.LastFailure = TaskCancelled, "the loop was cancelled"
		return
	case workflows.OutcomeFailed:
		t.Phase, t.LastFailure = TaskFailed, runes.Prefix(e.Failure, maxFailureChars)
		return
	}
	t.Round = e.Rounds
	switch e.Status {
	case report.OutcomeComplete:
		if e.Commit == "" {
			t.Phase, t.LastFailure = TaskFailed, "the loop completed without a checkpoint commit"
			return
		}
		t.Commit, t.Phase = e.Commit, TaskQueued
		c.queue = append(c.queue, t.Task.ID)
	case report.OutcomeBlocked:
		t.Phase, t.LastFailure = TaskBlocked, "the loop reported blocked: "+e.Blocker
	case report.OutcomeStopped:
		t.Phase, t.LastFailure = TaskCancelled, "the loop was stopped"
	default:
		t.Phase, t.LastFailure = TaskFailed, fmt.Sprintf("the loop ended %s (%s) after %d round(s)", e.Status, e.Limit, e.Rounds)
	}
}

// nextBatch takes up to mergeBatch queued tasks off the queue (one with
// approvals, whose wait is per task).
func (c *campaign) nextBatch() []*taskState {
	if c.pauseReason != "" {
		return nil // the queue waits for resume
	}
	n := c.settings.MergeBatch
	if c.holdsMerges() {
		n = 1
	}
	var batch []*taskState
	if len(c.queue) > 0 && c.byID[c.queue[0]].approved {
		t := c.byID[c.queue[0]] // an approved held merge lands alone
		c.queue = c.queue[1:]
		t.Phase = TaskMerging
		return []*taskState{t}
	}
	for len(c.queue) > 0 && len(batch) < n && !c.byID[c.queue[0]].approved {
		t := c.byID[c.queue[0]]
		c.queue = c.queue[1:]
		t.Phase = TaskMerging
		batch = append(batch, t)
	}
	return batch
}

// land runs the merge queue's step for a stack: landed, sent back, or
// bisected when the stack's tip fails the verify command.
func (c *campaign) land(ctx workflow.Context, batch []*taskState) error {
	if len(batch) == 1 && batch[0].approved {
		batch[0].approved = false
		return c.landHeld(ctx, batch[0])
	}
	in := activities.MergeTaskInput{Line: c.line(), VerifyCommand: c.settings.VerifyCommand, Hold: c.holdsMerges(),
		TaskFaults: c.limits.CampaignTaskFaults}
	ids := make([]string, len(batch))
	for i, t := range batch {
		in.Tasks = append(in.Tasks, c.taskRef(t))
		ids[i] = t.Task.ID
		in.ProtectedPaths = appendNew(in.ProtectedPaths, c.protected(t)...)
	}
	if in.Hold {
		in.HoldRef = c.holdRef(batch[0])
	}
	var out activities.MergeTaskOutput
	started := workflow.Now(ctx)
	if err := workflow.ExecuteActivity(c.mergeOptions(ctx, "merge "+strings.Join(ids, ", ")), activities.MergeTaskName, in).Get(ctx, &out); err != nil {
		if ctx.Err() != nil {
			return c.queueCancelled(ctx)
		}
		if c.limits.MergeRetryMinutes > 0 && !tasksFault(err) {
			c.holdQueue(ctx, batch, err)
			return nil
		}
		for _, t := range batch {
			t.Phase, t.LastFailure = TaskFailed, "merge step failed: "+runes.Prefix(err.Error(), 2000)
		}
		return nil
	}
	// One task's fault is one task's: it goes back alone, the rest is what
	// out's outcome is about.
	if batch, ids = c.leaveOut(ctx, batch, ids, out.Faults); len(batch) == 0 {
		return nil
	}
	if out.Outcome == activities.MergeLanded {
		c.head = out.Head // the head moves only on a landed merge
	}
	if out.Verification != nil {
		c.recordVerify(MergeVerify{Tasks: ids, Commit: out.Tip, ExitCode: out.Verification.ExitCode, Passed: out.Verification.Passed(),
			Started: started, DurationMs: workflow.Now(ctx).Sub(started).Milliseconds()})
	}
	switch out.Outcome {
	case activities.MergeLanded:
		c.merged(ctx, batch, out)
	case activities.MergeMoved:
		return c.land(ctx, batch)
	case activities.MergeConflict, activities.MergeRefused:
		return c.landWithout(ctx, batch, out)
	case activities.MergeRed:
		return c.landRed(ctx, batch, out)
	case activities.MergeHeld:
		if c.limits.CampaignHeldApart {
			c.holdApart(ctx, batch[0], out)
			return nil
		}
		return c.awaitApproval(ctx, batch[0], out)
	}
	return nil
}

// landWithout sends back the task whose merge conflicted or whose tree was
// refused, and lands the rest of the stack without it.
func (c *campaign) landWithout(ctx workflow.Context, batch []*taskState, out activities.MergeTaskOutput) error {
	failure := "merging into " + c.settings.Branch + " conflicts in " + strings.Join(out.ConflictPaths, ", ")
	if out.Outcome == activities.MergeRefused {
		// The task's own tree (section 38): sent back like a conflict.
		failure = "merging into " + c.settings.Branch + " was refused: " + out.Refused
	}
	rest := make([]*taskState, 0, len(batch))
	for _, t := range batch {
		if t.Task.ID == out.ConflictTask {
			c.sendBack(ctx, t, failure)
			if out.Outcome == activities.MergeConflict {
				c.keepEvidence(t, conflictEvidence(out.ConflictPaths))
			}
		} else {
			rest = append(rest, t)
		}
	}
	if len(rest) > 0 {
		return c.land(ctx, rest)
	}
	return nil
}

// landRed sends back a single task whose merged tree failed the verify
// command, or bisects a stack to find which of its tasks did.
func (c *campaign) landRed(ctx workflow.Context, batch []*taskState, out activities.MergeTaskOutput) error {
	if len(batch) == 1 {
		if c.headRedOn() {
			if paused, err := c.headRed(ctx, batch[0], out); paused || err != nil {
				return err
			}
		}
		v := out.Verification
		if c.limits.CampaignEvidence {
			// One sentence naming the command (shortened), the exit code
			// and the output's tail in the evidence (keepEvidence).
			c.sendBack(ctx, batch[0], fmt.Sprintf("The verify command `%s` exited %d on the merged tree.", shortCommand(v.Command), v.ExitCode))
			c.keepEvidence(batch[0], verifyEvidence(v))
			return nil
		}
		c.sendBack(ctx, batch[0], fmt.Sprintf("the verify command `%s` exited %d on the merged tree; its output ends:\n%s",
			v.Command, v.ExitCode, runes.Suffix(v.Output, 1500)))
		return nil
	}
	half := len(batch) / 2
	if err := c.land(ctx, batch[:half]); err != nil {
		return err
	}
	return c.land(ctx, batch[half:])
}

func (c *campaign) merged(ctx workflow.Context, batch []*taskState, out activities.MergeTaskOutput) {
	commits := map[string]string{}
	for _, m := range out.Merged {
		commits[m.ID] = m.Commit
	}
	for _, t := range batch {
		t.Phase, t.MergeCommit, t.LastFailure, t.Held, t.HeldOn, t.DiffStat = TaskMerged, commits[t.Task.ID], "", "", "", ""
		c.notifyTask(ctx, EventMerged, t)
	}
}

func (c *campaign) holdRef(t *taskState) string {
	return fmt.Sprintf("refs/ralph/campaigns/%s/held/%s/%d-%d", c.settings.ID, t.Task.ID, t.Go, t.MergeAttempts+1)
}

// awaitApproval holds a verified merge until approve or reject; approve
// lands the kept tip (merged again when the head moved meanwhile).
func (c *campaign) awaitApproval(ctx workflow.Context, t *taskState, out activities.MergeTaskOutput) error {
	t.Phase, t.Held, t.HeldOn, t.DiffStat = TaskAwaitingApproval, out.Tip, out.Head, out.DiffStat
	c.upsert(ctx)
	if err := workflow.Await(ctx, func() bool { return c.decisions[t.Task.ID] != nil }); err != nil {
		return c.queueCancelled(ctx)
	}
	d := c.decisions[t.Task.ID]
	delete(c.decisions, t.Task.ID)
	if !d.approved {
		t.Held, t.HeldOn, t.DiffStat = "", "", ""
		c.sendBack(ctx, t, "the merge was rejected: "+d.reason)
		return nil
	}
	t.Phase = TaskMerging
	return c.landHeld(ctx, t)
}

// landHeld lands an approved held merge: its kept tip onto the head it was
// merged on, or merged again when the head moved meanwhile.
func (c *campaign) landHeld(ctx workflow.Context, t *taskState) error {
	in := activities.MergeTaskInput{Line: c.line(), Tasks: []activities.CampaignTask{c.taskRef(t)},
		VerifyCommand: c.settings.VerifyCommand, HoldRef: c.holdRef(t), Land: t.Held, LandOn: t.HeldOn, ProtectedPaths: c.protected(t)}
	var landed activities.MergeTaskOutput
	if err := workflow.ExecuteActivity(c.mergeOptions(ctx, "land "+t.Task.ID), activities.MergeTaskName, in).Get(ctx, &landed); err != nil {
		if ctx.Err() != nil {
			return c.queueCancelled(ctx)
		}
		if c.limits.CampaignGitBound && c.limits.MergeRetryMinutes > 0 && !tasksFault(err) {
			t.approved = true // lands, not merges, after resume
			c.holdStep(ctx, []*taskState{t}, "landing task "+t.Task.ID+"'s approved merge", err)
			return nil
		}
		t.Phase, t.LastFailure = TaskFailed, "landing the approved merge failed: "+runes.Prefix(err.Error(), 2000)
		return nil
	}
	if landed.Outcome == activities.MergeMoved {
		return c.land(ctx, []*taskState{t})
	}
	c.head = landed.Head
	c.merged(ctx, []*taskState{t}, landed)
	return nil
}

// sendBack returns a task that did not merge to a new loop with a report
// naming what failed, or blocks it after maxMergeAttempts.
func (c *campaign) sendBack(ctx workflow.Context, t *taskState, failure string) {
	t.MergeAttempts++
	t.LastFailure = runes.Prefix(failure, 2000)
	if t.MergeAttempts >= c.settings.MaxMergeAttempts {
		t.Phase = TaskBlocked
		t.LastFailure = runes.Prefix(fmt.Sprintf("did not merge after %d attempts; the last: %s", t.MergeAttempts, failure), 2000)
		return
	}
	t.Phase = TaskReturned
	c.notifyTask(ctx, EventReturned, t)
}

// backReport is the campaign-written report a returned task's next loop
// starts from, validated like any report (cut until it fits).
func (c *campaign) backReport(t *taskState, failure string) *report.Report {
	limit := c.limits.MaxHandoffChars
	if c.limits.CampaignEvidence && t.Evidence != nil {
		if r := c.evidenceReport(t, failure); r != nil {
			return r
		}
	}
	for keep := 1500; keep > 0; keep /= 2 {
		r := report.Report{
			Status: report.StatusContinue,
			Summary: fmt.Sprintf("The task's work was complete on its branch, but it did not merge into %s (attempt %d of %d): %s",
				c.settings.Branch, t.MergeAttempts, c.settings.MaxMergeAttempts, runes.Prefix(failure, keep)),
			Evidence: []string{},
			NextSteps: []string{
				"The integration branch's head is merged into this workspace now; where it conflicted, the conflict markers are committed as they stand.",
				"Bring the task's change onto the integration branch's current content, keeping the task's intent and what the other tasks landed, until the verify command passes; then report complete.",
			},
		}
		if report.Validate(r, limit) == nil {
			return &r
		}
	}
	r := report.Report{Status: report.StatusContinue, Summary: "The task did not merge into the integration branch.", Evidence: []string{},
		NextSteps: []string{"Make the task's change pass the verify command on the integration branch's content."}}
	return &r
}

func (c *campaign) finish(ctx workflow.Context) *CampaignResult {
	status := CampaignComplete
	for _, t := range c.tasks {
		if t.Phase != TaskMerged {
			status = CampaignPartial
		}
	}
	if c.planning() {
		status = c.wave.outcome() // complete only when verified on the head
	}
	switch {
	case status == CampaignComplete || status == CampaignBlocked:
	case c.stopping:
		status = CampaignStopped
	case c.limitHit != "":
		status = CampaignBudgetLimited
	}
	for _, t := range c.tasks {
		if t.Phase == TaskWaiting || t.Phase == TaskReturned {
			t.Phase = TaskCancelled
			if t.LastFailure == "" {
				t.LastFailure = "not started: the campaign ended " + status
			}
		}
	}
	c.finished = status
	c.upsert(ctx)
	c.notifyEnd(ctx, status)
	return c.result(status)
}

// result is the campaign's result: every task's phase, merge commit and
// failure, the failures cut (first to last, to cutFailureChars, then away)
// while it is over maxPayloadBytes (measured).
func (c *campaign) result(status string) *CampaignResult {
	res := &CampaignResult{Status: status, Tasks: []TaskResult{}, IntegrationBranch: c.settings.Branch, Head: c.head, Usage: c.usage,
		Waves: c.wave.History, Blocker: c.wave.Blocker}
	for _, t := range c.tasks {
		res.Tasks = append(res.Tasks, TaskResult{ID: t.Task.ID, Phase: t.Phase, MergeCommit: t.MergeCommit, LastFailure: t.LastFailure})
	}
	size := encodedSize(res)
	for _, keep := range []int{cutFailureChars, 0} {
		for i := 0; i < len(res.Tasks) && size > maxPayloadBytes; i++ {
			r := &res.Tasks[i]
			before := encodedSize(r)
			r.LastFailure = runes.Prefix(r.LastFailure, keep)
			size -= before - encodedSize(r)
		}
	}
	return res
}

// cancelled ends a cancelled campaign once every running loop has taken
// its cancel (each child's running round stops first): those this run
// started through their child futures, those an earlier run started asked
// by workflow id, their ends told by their reports (or watchCarried).
func (c *campaign) cancelled(ctx workflow.Context) error {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	c.cancelCarried(dctx)
	for {
		c.takeEnds(dctx)
		if c.running == 0 && !c.merging {
			break
		}
		_ = workflow.Await(dctx, func() bool { return (c.running == 0 && !c.merging) || c.ends.Len() > 0 })
	}
	c.finished = workflows.OutcomeCancelled
	c.upsert(dctx)
	return temporal.NewCanceledError()
}

func (c *campaign) continueAsNew(ctx workflow.Context) error {
	c.takeEnds(ctx) // what arrived in this workflow task is carried applied
	return workflow.NewContinueAsNewError(ctx, CampaignWorkflowName, nil, c.continuation())
}

// continuation is what continue-as-new carries, within maxPayloadBytes.
func (c *campaign) continuation() *CampaignContinuation {
	k := &CampaignContinuation{Limits: c.limits, Settings: c.settings, Queue: c.queue, Head: c.head, Usage: c.usage,
		Budget: c.budget, Paused: c.paused, Stopping: c.stopping, Verifies: c.verifies,
		VerifyCount: c.verifyCount, VerifyFailed: c.verifyFailed, Sources: c.sources, PauseReason: c.pauseReason, Pauses: c.pauses,
		PauseOutput: c.pauseOutput, LaneCount: c.laneCount, VerifyDiscarded: c.verifyDiscarded}
	for _, t := range c.tasks {
		k.Tasks = append(k.Tasks, *t)
	}
	c.carryWaves(k)
	fit(k)
	return k
}

func (c *campaign) phase() string {
	switch {
	case c.finished != "":
		return workflows.PhaseFinished
	case c.paused || c.pauseReason != "": // a head-red pause holds the queue alone
		return workflows.PhasePaused
	case c.wave.pending != nil:
		return PhaseAwaitingPlanApproval
	}
	return workflows.PhaseRunning
}

// upsert publishes the campaign's phase and id as search attributes.
func (c *campaign) upsert(ctx workflow.Context) {
	if !c.limits.SearchAttributes {
		return
	}
	phase := c.phase()
	for _, t := range c.tasks {
		if t.Phase == TaskAwaitingApproval && phase == workflows.PhaseRunning {
			phase = TaskAwaitingApproval
		}
	}
	updates := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrCampaign).ValueSet(c.settings.ID),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrPhase).ValueSet(phase),
	}
	if c.finished != "" {
		updates = append(updates, temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrOutcome).ValueSet(c.finished))
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("Upserting the campaign's search attributes failed", "error", err)
	}
}

// protected are the paths task t's loop and merge protect: the campaign's,
// then the task's own.
func (c *campaign) protected(t *taskState) []string {
	return appendNew(append([]string(nil), c.settings.ProtectedPaths...), t.Task.ProtectedPaths...)
}

// appendNew appends the items list does not hold yet.
func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// recordVerify counts a verify of the queue and keeps the last ones.
func (c *campaign) recordVerify(v MergeVerify) {
	if !c.limits.CampaignVerifyTimes {
		v.Started, v.DurationMs = time.Time{}, 0 // a campaign recorded before them carries none
	}
	switch {
	case v.Discarded != "":
		c.verifyDiscarded++
	case !v.Passed:
		c.verifyCount++
		c.verifyFailed++
	default:
		c.verifyCount++
	}
	c.verifies = append(c.verifies, v)
	if len(c.verifies) > maxVerifiesKept {
		c.verifies = slices.Clone(c.verifies[len(c.verifies)-maxVerifiesKept:])
	}
}

// share is a loop's part of the tokens left: divided by the loops that will
// run at once (maxParallel, or fewer when fewer tasks remain), so loops
// started together cannot spend more than the whole (CampaignShares; a
// campaign begun before it hands each loop the whole when it starts).
func (c *campaign) share(left int) int {
	if !c.limits.CampaignShares {
		return left
	}
	remaining := 0
	for _, t := range c.tasks {
		switch t.Phase {
		case TaskWaiting, TaskReturned, TaskRunning:
			remaining++
		}
	}
	return max(left/max(min(c.settings.MaxParallel, remaining), 1), 1)
}

// mergeOptions are a merge step's: the git step's, retried for at most
// RALPH_MERGE_RETRY_MINUTES when the limits record it (else without end).
func (c *campaign) mergeOptions(ctx workflow.Context, summary string) workflow.Context {
	ctx = c.gitOptions(ctx, summary)
	if c.limits.MergeRetryMinutes > 0 {
		opts := workflow.GetActivityOptions(ctx)
		opts.ScheduleToCloseTimeout = time.Duration(c.limits.MergeRetryMinutes) * time.Minute
		ctx = workflow.WithActivityOptions(ctx, opts)
	}
	return ctx
}

// tasksFault: the merge step failed on what the tasks gave it (a missing
// branch, a bad workspace), not on the worker's git, disk or network.
func tasksFault(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && (app.Type() == activities.ErrTypeCampaignGit || app.Type() == activities.ErrTypeBadRoundInput)
}

// holdQueue pauses the merge queue after a git step kept failing for a
// reason that is not the tasks': the stack goes back to the queue's front
// (nothing is marked failed), the campaign's phase is paused with the
// reason, and resume retries it.
func (c *campaign) holdQueue(ctx workflow.Context, batch []*taskState, err error) {
	c.holdStep(ctx, batch, "the merge step", err)
}

// holdStep is holdQueue for the git step named.
func (c *campaign) holdStep(ctx workflow.Context, batch []*taskState, step string, err error) {
	ids := make([]string, len(batch))
	for i, t := range batch {
		t.Phase, ids[i] = TaskQueued, t.Task.ID
	}
	c.queue = append(ids, c.queue...)
	c.pauseGit(ctx, step, err)
}

// holdApart keeps a verified merge for approval beside the queue: the task
// waits in awaiting-approval (the held tree on its ref, a notification)
// while other tasks start, run and merge; an approval sends it back to the
// queue's front to land, a rejection back to a loop; the approval timeout
// or a stop ends the wait, the held merge left on its ref.
func (c *campaign) holdApart(ctx workflow.Context, t *taskState, out activities.MergeTaskOutput) {
	t.Phase, t.Held, t.HeldOn, t.DiffStat = TaskAwaitingApproval, out.Tip, out.Head, out.DiffStat
	c.upsert(ctx)
	c.notifyTask(ctx, workflows.EventAwaitingApproval, t)
	c.startHolding(ctx, t)
}

// startHolding runs the wait for t's decision in a coroutine of its own (a
// continued campaign starts one for each task it carried waiting).
func (c *campaign) startHolding(ctx workflow.Context, t *taskState) {
	c.holding++
	workflow.Go(ctx, func(ctx workflow.Context) {
		defer func() { c.holding--; c.dirty = true }()
		decided := func() bool { return c.decisions[t.Task.ID] != nil || c.stopping }
		ok := true
		var err error
		if hours := c.limits.ApprovalTimeoutHours; hours > 0 {
			ok, err = workflow.AwaitWithTimeout(ctx, time.Duration(hours)*time.Hour, decided)
		} else {
			err = workflow.Await(ctx, decided)
		}
		switch d := c.decisions[t.Task.ID]; {
		case err != nil:
			return // cancelled: the campaign's cancel ends it
		case d != nil:
			delete(c.decisions, t.Task.ID)
			if !d.approved {
				t.Held, t.HeldOn, t.DiffStat = "", "", ""
				c.sendBack(ctx, t, "the merge was rejected: "+d.reason)
				return
			}
			t.Phase, t.approved = TaskQueued, true
			c.queue = append([]string{t.Task.ID}, c.queue...)
		case !ok:
			t.Phase = TaskCancelled
			t.LastFailure = fmt.Sprintf("the approval wait ended after %d hours (RALPH_APPROVAL_TIMEOUT_HOURS); the verified merge is kept on %s", c.limits.ApprovalTimeoutHours, c.holdRef(t))
		default:
			t.Phase = TaskCancelled
			t.LastFailure = "the campaign was stopped while the merge awaited approval; the verified merge is kept on " + c.holdRef(t)
		}
	})
}

// startQueue runs the merge queue in a coroutine beside the main loop
// (CampaignQueueApart, SPEC 39): it lands the stacks in queue order while
// the main loop starts loops, takes their ends and answers updates; it
// wakes the main loop after each stack (dependents may start, a returned
// task goes again).
func (c *campaign) startQueue(ctx workflow.Context) {
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			// A continue-as-new that is due carries the queue (CampaignNoDrain)
			// rather than wait for it to empty: no next stack is taken.
			if err := workflow.Await(ctx, func() bool { return (c.queueReady() && !c.moveDue(ctx)) || c.recheck }); err != nil {
				return // cancelled: the main loop ends the campaign
			}
			c.merging = true
			var err error
			if c.recheck {
				err = c.recheckHead(ctx) // resume after a head-red pause
			} else if c.settings.MergeLanes > 1 {
				err = c.runLanes(ctx)
			} else {
				err = c.land(ctx, c.nextBatch())
			}
			c.merging, c.dirty = false, true
			if err != nil {
				return // only a cancel: the main loop ends the campaign
			}
		}
	})
}

// queueReady: a stack can be taken off the queue (it is not paused).
func (c *campaign) queueReady() bool {
	return c.pauseReason == "" && len(c.queue) > 0
}

// queueBusy: the queue's coroutine is landing a stack or is about to take
// one; the campaign neither finishes nor continues as new meanwhile.
func (c *campaign) queueBusy() bool {
	return c.limits.CampaignQueueApart && (c.merging || c.queueReady() || c.recheck)
}

// queueCancelled ends a merge step the campaign's cancel interrupted: the
// main loop ends the campaign when the queue runs beside it, else here.
func (c *campaign) queueCancelled(ctx workflow.Context) error {
	if c.limits.CampaignQueueApart {
		return temporal.NewCanceledError()
	}
	return c.cancelled(ctx)
}
