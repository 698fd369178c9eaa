package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// Planning waves (SPEC 40): a campaign given an objective instead of tasks
// runs in waves. Each wave begins with a planning round (the PlanWave
// activity: a fresh planner on the integration head that sees the
// objective, the last wave's report and a person's rejection); its plan's
// tasks run as a task list's do; once every one merged or ended the
// campaign writes the wave's report, the only state that crosses to the
// next wave's planner. A plan saying complete is checked by the verify
// command on the integration head; blocked ends the campaign blocked.
//
// The waves are an input-driven switch: only a campaign started with an
// objective runs them, so recorded histories replay unchanged.

const (
	fieldMaxWaves             = "maxWaves"
	ApprovePlan               = "plan"
	ApprovePlanMerge          = "plan,merge"
	DefaultMaxWaves           = 5
	PhaseAwaitingPlanApproval = "awaiting-plan-approval"
	// QueryPlan answers the current wave's plan in full (the status cuts
	// its objectives).
	QueryPlan = "plan"
	// WaveFailed is a wave whose planner failed (its status in waves).
	WaveFailed = "failed"
)

// Bounds of what the waves keep and show.
const (
	maxWavesListed        = 20       // waves kept (and shown) in full
	maxWaveSummaryChars   = 1000     // a wave's plan summary as kept
	statusWaveSummaryChar = 300      // ... as the status shows it
	maxWaveStatusBytes    = 32 << 10 // the waves' part of the 64 KiB status
	verifyTailChars       = 2000     // a red head's output in a wave report
)

// WaveInfo is one wave in the status and the result.
type WaveInfo struct {
	Wave    int      `json:"wave"`
	Status  string   `json:"status"` // the plan's: tasks, complete, blocked; failed
	Summary string   `json:"summary"`
	Tasks   []string `json:"tasks"`
	// Approval is how a person answered the plan (approve "plan"):
	// approved, replaced (their list ran), timed-out, stopped.
	Approval string `json:"approval,omitempty"`
	// Verify is the integration head's verify after a complete plan:
	// passed, or failed (exit N).
	Verify string `json:"verify,omitempty"`
}

// WavePlan is the current wave's plan: awaiting approval, or running.
type WavePlan struct {
	Wave             int           `json:"wave"`
	Status           string        `json:"status"`
	Summary          string        `json:"summary"`
	Tasks            []PlannedTask `json:"tasks"`
	Evidence         []string      `json:"evidence,omitempty"`
	Blocker          string        `json:"blocker,omitempty"`
	AwaitingApproval bool          `json:"awaitingApproval,omitempty"`
}

// PlannedTask is one task of a wave's plan.
type PlannedTask struct {
	ID        string   `json:"id"`
	DependsOn []string `json:"dependsOn,omitempty"`
	Objective string   `json:"objective"`
}

// WaveStatus is a planning campaign's part of the status: the wave, the
// last maxWavesListed waves (older ones counted), the current plan and what
// the planners spent (also in the campaign's usage).
type WaveStatus struct {
	Wave          int         `json:"wave,omitempty"`
	Waves         []WaveInfo  `json:"waves,omitempty"`
	WavesUnlisted int         `json:"wavesUnlisted,omitempty"`
	Plan          *WavePlan   `json:"plan,omitempty"`
	PlannerUsage  usage.Usage `json:"plannerUsage,omitzero"`
}

// waveState is what the campaign knows of its waves; all but the pending
// plan crosses continue-as-new (which never happens while a plan waits).
type waveState struct {
	Number int  `json:"number"` // the current wave (0: none yet)
	Ended  bool `json:"ended,omitempty"`
	// History holds every wave; those before the last maxWavesListed keep
	// their number and status only.
	History []WaveInfo `json:"history,omitempty"`
	// Report is the last ended wave's report, the next planner's input;
	// Guidance a person's reason for rejecting the last plan.
	Report   *plan.WaveReport `json:"report,omitempty"`
	Guidance string           `json:"guidance,omitempty"`
	Usage    usage.Usage      `json:"usage"`
	Asks     int              `json:"asks,omitempty"` // plan approval waits (notification keys)
	// Outcome is the result status the waves decided; Blocker the
	// blocked planner's blocker.
	Outcome string `json:"outcome,omitempty"`
	Blocker string `json:"blocker,omitempty"`
	pending *plan.Plan
	answer  *planAnswer
}

// planAnswer is a person's answer to a plan awaiting approval.
type planAnswer struct {
	approved bool
	tasks    []Task // a replacement list (approve {"tasks": [...]})
	reason   string // a rejection's
}

func (c *campaign) planning() bool { return c.settings.Objective != "" }

// holdsMerges: verified merges wait for approval (approve merge).
func (c *campaign) holdsMerges() bool {
	return c.settings.Approve == ApproveMerge || c.settings.Approve == ApprovePlanMerge
}

func (c *campaign) holdsPlans() bool {
	return c.settings.Approve == ApprovePlan || c.settings.Approve == ApprovePlanMerge
}

// current is the running wave's entry (nil while its plan is not decided).
func (w *waveState) current() *WaveInfo {
	if n := len(w.History); n > 0 && w.History[n-1].Wave == w.Number {
		return &w.History[n-1]
	}
	return nil
}

// outcome is the result status the waves give: partial until a verified
// complete or a blocked plan decided another.
func (w *waveState) outcome() string {
	if w.Outcome == "" {
		return CampaignPartial
	}
	return w.Outcome
}

// advance moves a planning campaign on once nothing of its wave runs: the
// wave's report, then the end or the next wave's plan. progressed says the
// main loop has more to do at once (tasks added, a next wave due).
func (c *campaign) advance(ctx workflow.Context, drain bool) (res *CampaignResult, progressed bool, err error) {
	w := &c.wave
	if !w.Ended && w.current() != nil {
		c.endWave()
	}
	switch {
	case c.stopping || c.limitHit != "" || w.Outcome != "":
		return c.finish(ctx), false, nil
	case c.paused:
		return nil, false, nil // resume wakes the main loop
	case w.Number >= c.settings.MaxWaves:
		w.Outcome = CampaignPartial
		return c.finish(ctx), false, nil
	case drain:
		return nil, false, c.continueAsNew(ctx) // between waves: only the report crosses
	}
	w.Number++
	w.Ended = false
	p := c.planWave(ctx)
	switch {
	case ctx.Err() != nil:
		return nil, false, c.cancelled(ctx)
	case p == nil:
		return c.finish(ctx), false, nil
	case p.Status == plan.StatusTasks:
		c.add(p.Tasks, 0)
		return nil, true, nil
	case p.Status == plan.StatusComplete:
		return c.verifyComplete(ctx)
	}
	w.Outcome, w.Blocker = CampaignBlocked, p.Blocker
	return c.finish(ctx), false, nil
}

// planWave runs the wave's planning rounds until there is a plan to act
// on: the planner's (approved, with approve plan) or a person's list. It
// returns nil when the campaign ends instead: a stop, the approval
// timeout, a planner that failed.
func (c *campaign) planWave(ctx workflow.Context) *plan.Plan {
	w := &c.wave
	for {
		p, err := c.runPlanner(ctx)
		if err == nil {
			err = c.checkPlan(*p)
		}
		if err != nil {
			if ctx.Err() == nil && !c.stopping {
				w.Outcome = CampaignPartial
				w.History = append(w.History, WaveInfo{Wave: w.Number, Status: WaveFailed, Tasks: []string{},
					Summary: "the planning round failed: " + runes.Prefix(activityProblem(err), maxWaveSummaryChars-30)})
			}
			return nil
		}
		w.Guidance = ""
		if !c.holdsPlans() {
			return c.accept(p, "")
		}
		a := c.awaitPlanAnswer(ctx, p)
		switch {
		case a == nil:
			return nil
		case !a.approved:
			w.Guidance = a.reason
		case a.tasks != nil:
			return c.accept(&plan.Plan{Status: plan.StatusTasks, Summary: p.Summary, Tasks: a.tasks}, "replaced")
		default:
			return c.accept(p, "approved")
		}
	}
}

// accept records the wave's plan in its history (older waves trimmed).
func (c *campaign) accept(p *plan.Plan, approval string) *plan.Plan {
	w := &c.wave
	ids := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		ids[i] = t.ID
	}
	w.History = append(w.History, WaveInfo{Wave: w.Number, Status: p.Status, Summary: runes.Prefix(p.Summary, maxWaveSummaryChars),
		Tasks: ids, Approval: approval})
	for i := 0; i < len(w.History)-maxWavesListed; i++ {
		w.History[i].Summary, w.History[i].Tasks = "", nil
	}
	return p
}

// runPlanner runs one planning round: the PlanWave activity with the
// round's retries and heartbeat, a share of the campaign's budget, its
// usage charged to the campaign; a stop cancels it.
func (c *campaign) runPlanner(ctx workflow.Context) (*plan.Plan, error) {
	w := &c.wave
	in := activities.PlanWaveInput{Line: c.line(), Wave: w.Number, Objective: c.settings.Objective, Head: c.head,
		Report: w.Report, Guidance: w.Guidance, Rules: c.rules(), MaxHandoffChars: c.limits.MaxHandoffChars, RunDeadline: c.budget.Deadline}
	if left := c.budget.TokensLeft(c.usage); left > 0 {
		in.TokenBudget = max(left/max(c.settings.MaxParallel, 1), 1) // a planner's share is a loop's
	}
	pctx, cancel := workflow.WithCancel(ctx)
	done := false
	workflow.Go(ctx, func(ctx workflow.Context) {
		if workflow.Await(ctx, func() bool { return done || c.stopping }) == nil && !done {
			cancel()
		}
	})
	var out activities.PlanWaveOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(pctx, c.planOptions()), activities.PlanWaveName, in).Get(ctx, &out)
	done = true
	spent := out.Usage
	if err != nil {
		var whole bool
		if spent, whole = workflows.RunUsageOf(err); !whole {
			spent = failedUsage(err)
		}
	}
	c.usage, w.Usage = c.usage.Add(spent), w.Usage.Add(spent)
	c.checkBudget(ctx)
	return &out.Plan, err
}

// planOptions are a planning round's: a round's timeout, heartbeat and
// retries (infrastructure failures only).
func (c *campaign) planOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(c.limits.RoundTimeoutSeconds) * time.Second,
		HeartbeatTimeout:    time.Duration(c.limits.HeartbeatTimeoutSeconds) * time.Second,
		WaitForCancellation: true,
		Summary:             fmt.Sprintf("plan wave %d", c.wave.Number),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 2 * time.Minute,
			MaximumAttempts:        int32(max(c.limits.RoundAttempts, 1)),
			NonRetryableErrorTypes: []string{activities.ErrTypeChildFailed, activities.ErrTypeBadRoundInput},
		},
	}
}

// rules are what a wave's plan is checked against: the wave ceiling
// (within the campaign's task ceiling), every task id of the campaign, and
// those that merged.
func (c *campaign) rules() plan.Rules {
	r := plan.Rules{MaxTasks: maxWaveTasks(c.limits), KnownIDs: make([]string, 0, len(c.tasks)), MergedIDs: []string{},
		MaxObjectiveChars: c.limits.MaxObjectiveChars}
	if c.limits.MaxCampaignTasks > 0 {
		r.MaxTasks = max(min(r.MaxTasks, c.limits.MaxCampaignTasks-len(c.tasks)), 0)
	}
	for _, t := range c.tasks {
		r.KnownIDs = append(r.KnownIDs, t.Task.ID)
		if t.Phase == TaskMerged {
			r.MergedIDs = append(r.MergedIDs, t.Task.ID)
		}
	}
	return r
}

// checkPlan checks a plan by plan.Validate (the rules the planner's tool
// applies) and its tasks by the campaign's own task-list rules (ids that
// name branches, objective lengths, dependencies, cycles).
func (c *campaign) checkPlan(p plan.Plan) error {
	if err := plan.Validate(p, c.rules()); err != nil {
		return err
	}
	if p.Status != plan.StatusTasks {
		return nil
	}
	raw, _ := json.Marshal(p.Tasks) // tasks always encode
	existing := make([]Task, len(c.tasks))
	for i, t := range c.tasks {
		existing[i] = t.Task
	}
	_, err := parseTasks(raw, c.limits, existing, c.limits.MaxCampaignTasks)
	return err
}

// awaitPlanAnswer holds the plan for a person: phase awaiting-plan-approval,
// an awaiting-approval notification, until approve or reject, a stop, or
// the approval timeout. nil: the wait ended without an answer.
func (c *campaign) awaitPlanAnswer(ctx workflow.Context, p *plan.Plan) *planAnswer {
	w := &c.wave
	w.pending, w.answer = p, nil
	w.Asks++
	c.upsert(ctx)
	c.notifyPlan(ctx, p)
	decided := func() bool { return w.answer != nil || c.stopping }
	ok, err := true, error(nil)
	if hours := c.limits.ApprovalTimeoutHours; hours > 0 {
		ok, err = workflow.AwaitWithTimeout(ctx, time.Duration(hours)*time.Hour, decided)
	} else {
		err = workflow.Await(ctx, decided)
	}
	a := w.answer
	w.pending, w.answer = nil, nil
	switch {
	case err != nil:
		return nil // cancelled
	case a != nil:
		c.upsert(ctx)
		return a
	case !ok:
		c.stopping = true // ends the campaign stopped, as a run's approval timeout does
		c.accept(p, "timed-out")
	default:
		c.accept(p, "stopped")
	}
	return nil
}

// notifyPlan tells the receiver a wave's plan awaits approval (Round 0,
// which no task's event has; Seq counts the waits).
func (c *campaign) notifyPlan(ctx workflow.Context, p *plan.Plan) {
	if !slices.Contains(c.limits.NotifyEvents, workflows.EventAwaitingApproval) {
		return
	}
	run := workflow.GetInfo(ctx).WorkflowExecution
	text := fmt.Sprintf("Campaign %s: wave %d's plan (%s, %d tasks) awaits approval: %s", run.ID, c.wave.Number, p.Status, len(p.Tasks),
		activities.QuoteModelText(runes.Prefix(p.Summary, 300)))
	notifyDetached(ctx, activities.NotifyInput{Event: workflows.EventAwaitingApproval, WorkflowID: run.ID, RunID: run.RunID,
		Seq: c.wave.Asks, Status: PhaseAwaitingPlanApproval, Text: text})
}

// verifyComplete runs the verify command on the integration head after a
// complete plan: passed ends the campaign complete; failed ends the wave,
// its report carrying the failure to the next planner.
func (c *campaign) verifyComplete(ctx workflow.Context) (*CampaignResult, bool, error) {
	w := &c.wave
	cur := w.current()
	in := activities.MergeTaskInput{Line: c.line(), VerifyCommand: c.settings.VerifyCommand, ProtectedPaths: c.settings.ProtectedPaths, VerifyHead: true}
	var out activities.MergeTaskOutput
	err := workflow.ExecuteActivity(c.mergeOptions(ctx, "verify the integration head"), activities.MergeTaskName, in).Get(ctx, &out)
	if err == nil && out.Verification == nil {
		err = errors.New("MergeTask answered a head verify without a verification")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, c.cancelled(ctx)
		}
		cur.Verify = "could not run: " + runes.Prefix(activityProblem(err), 300)
		w.Outcome = CampaignPartial
		return c.finish(ctx), false, nil
	}
	if c.head == "" {
		c.head = out.Head
	}
	v := *out.Verification
	c.recordVerify(MergeVerify{Tasks: []string{}, Commit: out.Head, ExitCode: v.ExitCode, Passed: v.Passed()})
	if v.Passed() {
		cur.Verify, w.Outcome = "passed", CampaignComplete
		return c.finish(ctx), false, nil
	}
	cur.Verify = fmt.Sprintf("failed (exit %d)", v.ExitCode)
	w.Report = fitReport(plan.WaveReport{Wave: w.Number, Summary: cur.Summary, Tasks: []plan.TaskOutcome{},
		Verify: &plan.HeadVerify{Command: v.Command, Head: out.Head, ExitCode: v.ExitCode, OutputTail: runes.Suffix(v.Output, verifyTailChars)}}, c.limits.MaxHandoffChars)
	w.Ended = true
	return nil, true, nil
}

// endWave writes the wave's report from its tasks' ends.
func (c *campaign) endWave() {
	w := &c.wave
	cur := w.current()
	w.Ended = true
	r := plan.WaveReport{Wave: cur.Wave, Summary: cur.Summary, Tasks: make([]plan.TaskOutcome, 0, len(cur.Tasks))}
	for _, id := range cur.Tasks {
		if t := c.byID[id]; t != nil {
			r.Tasks = append(r.Tasks, plan.TaskOutcome{ID: id, Outcome: t.Phase, MergeCommit: t.MergeCommit, Failure: t.LastFailure})
		}
	}
	w.Report = fitReport(r, c.limits.MaxHandoffChars)
}

// fitReport is the wave report within the handoff cap (plan's Fit: the
// failures and the verify output's tail cut, then the summary; tasks left
// out only past hundreds); one that cannot fit at all keeps its number.
func fitReport(r plan.WaveReport, limit int) *plan.WaveReport {
	fitted, err := r.Fit(limit)
	if err != nil {
		return &plan.WaveReport{Wave: r.Wave, Tasks: []plan.TaskOutcome{}}
	}
	return &fitted
}

// waveStatus is the status's part of the waves, within maxWaveStatusBytes
// (measured): the oldest listed waves go first, then the plan's objectives.
func (c *campaign) waveStatus() WaveStatus {
	if !c.planning() {
		return WaveStatus{}
	}
	w := &c.wave
	from := max(len(w.History)-maxWavesListed, 0)
	s := WaveStatus{Wave: w.Number, Waves: []WaveInfo{}, WavesUnlisted: from, Plan: c.wavePlan(summaryObjectiveChars), PlannerUsage: w.Usage}
	for _, h := range w.History[from:] {
		h.Summary = runes.Prefix(h.Summary, statusWaveSummaryChar)
		s.Waves = append(s.Waves, h)
	}
	for len(s.Waves) > 0 && encodedSize(s) > maxWaveStatusBytes {
		s.Waves, s.WavesUnlisted = s.Waves[1:], s.WavesUnlisted+1
	}
	if s.Plan != nil && encodedSize(s) > maxWaveStatusBytes {
		for i := range s.Plan.Tasks {
			s.Plan.Tasks[i].Objective = ""
		}
	}
	return s
}

// wavePlan is the current wave's plan (the pending one while it awaits
// approval), objectives cut to keep characters (0: whole).
func (c *campaign) wavePlan(keep int) *WavePlan {
	w := &c.wave
	cut := func(s string) string {
		if keep > 0 {
			return runes.Prefix(s, keep)
		}
		return s
	}
	if p := w.pending; p != nil {
		wp := &WavePlan{Wave: w.Number, Status: p.Status, Summary: cut(p.Summary), Tasks: []PlannedTask{}, Evidence: p.Evidence,
			Blocker: p.Blocker, AwaitingApproval: true}
		for _, t := range p.Tasks {
			wp.Tasks = append(wp.Tasks, PlannedTask{ID: t.ID, DependsOn: t.DependsOn, Objective: cut(t.Objective)})
		}
		return wp
	}
	cur := w.current()
	if cur == nil {
		return nil
	}
	wp := &WavePlan{Wave: cur.Wave, Status: cur.Status, Summary: cut(cur.Summary), Tasks: []PlannedTask{}}
	if cur.Status == plan.StatusBlocked {
		wp.Blocker = w.Blocker
	}
	for _, id := range cur.Tasks {
		if t := c.byID[id]; t != nil {
			wp.Tasks = append(wp.Tasks, PlannedTask{ID: id, DependsOn: t.Task.DependsOn, Objective: cut(t.Task.Objective)})
		}
	}
	return wp
}

// planQuery answers the plan query: the current wave's plan in full.
func (c *campaign) planQuery() (WavePlan, error) {
	if !c.planning() {
		return WavePlan{}, fmt.Errorf("the campaign has a task list, no objective: it plans no waves")
	}
	p := c.wavePlan(0)
	if p == nil {
		return WavePlan{}, fmt.Errorf("wave %d has no plan yet", c.wave.Number)
	}
	return *p, nil
}

// carryWaves puts the waves in a continuation and leaves out the
// objectives of earlier waves' tasks, which all ended: no loop reads them
// again (the status shows them empty after the continue-as-new).
func (c *campaign) carryWaves(k *CampaignContinuation) {
	if !c.planning() {
		return
	}
	w := c.wave
	k.Wave = &w
	var current []string
	if cur := c.wave.current(); cur != nil {
		current = cur.Tasks
	}
	for i := range k.Tasks {
		t := &k.Tasks[i]
		if !slices.Contains(current, t.Task.ID) && !startedOrPending(t.Phase) {
			t.Task.Objective = ""
		}
	}
}

// startedOrPending: the task may still run a go.
func startedOrPending(phase string) bool {
	switch phase {
	case TaskWaiting, TaskReturned, TaskRunning, TaskQueued, TaskMerging, TaskAwaitingApproval:
		return true
	}
	return false
}
