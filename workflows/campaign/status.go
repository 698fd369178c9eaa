package campaign

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/runes"
)

// Bounds of the campaign's query answers (docs/campaigns.md, "Capacity").
const (
	maxStatusBytes  = 64 << 10 // the status summary
	maxAnswerBytes  = 1 << 20  // a tasks page, a task (half of Temporal's payload limit)
	maxStatusListed = 100      // tasks the summary lists
	maxPageTasks    = 500      // a tasks page's limit
	// summaryFailureChars and summaryObjectiveChars cut the listed tasks'
	// texts in the summary (the task query has them whole).
	summaryFailureChars   = 300
	summaryObjectiveChars = 120
)

// listed: the summary lists a task in this phase.
func listed(phase string) bool {
	switch phase {
	case TaskRunning, TaskQueued, TaskMerging, TaskAwaitingApproval, TaskReturned, TaskBlocked, TaskFailed:
		return true
	}
	return false
}

// snapshot is the status summary: counts, head, usage, verifies and the
// active and failing tasks, cut to fit within maxStatusBytes.
func (c *campaign) snapshot() CampaignStatus {
	s := CampaignStatus{Phase: c.phase(), PauseReason: c.pauseReason, PauseOutput: c.pauseOutput, Counts: map[string]int{}, Total: len(c.tasks), Tasks: []TaskStatus{},
		IntegrationBranch: c.settings.Branch, Head: c.head, Usage: c.usage, Outcome: c.finished, StopRequested: c.stopping,
		Verifies: slices.Clone(c.verifies), VerifyCount: c.verifyCount, VerifyFailed: c.verifyFailed, Budget: c.budget.Status(), WaveStatus: c.waveStatus()}
	if s.PauseReason == "" && c.paused {
		s.PauseReason = PauseOperator
	}
	if s.Verifies == nil {
		s.Verifies = []MergeVerify{}
	}
	s.VerifyDiscarded, s.Lanes = c.verifyDiscarded, c.laneStatus()
	for _, t := range c.tasks {
		s.Counts[t.Phase]++
		if !listed(t.Phase) {
			continue
		}
		if len(s.Tasks) == maxStatusListed {
			s.Unlisted++
			continue
		}
		ts := c.taskStatus(t)
		ts.LastFailure = runes.Prefix(ts.LastFailure, summaryFailureChars)
		ts.Objective = runes.Prefix(ts.Objective, summaryObjectiveChars)
		s.Tasks = append(s.Tasks, ts)
	}
	s.Merged = s.Counts[TaskMerged]
	// Measured, not assumed: drop listed tasks from the end (counted) until
	// the answer fits.
	for len(s.Tasks) > 0 && encodedSize(s) > maxStatusBytes {
		s.Tasks, s.Unlisted = s.Tasks[:len(s.Tasks)-1], s.Unlisted+1
	}
	return s
}

func encodedSize(v any) int {
	raw, _ := json.Marshal(v) // the query answers are plain structs
	return len(raw)
}

func (c *campaign) taskStatus(t *taskState) TaskStatus {
	deps := t.Task.DependsOn
	if deps == nil {
		deps = []string{}
	}
	return TaskStatus{ID: t.Task.ID, Phase: t.Phase, Go: t.Go, Round: t.Round, WorkflowID: t.WorkflowID,
		Branch: "ralph/" + activities.TaskWorkspace(c.settings.ID, t.Task.ID), MergeCommit: t.MergeCommit,
		MergeAttempts: t.MergeAttempts, LastFailure: t.LastFailure, Usage: t.Usage, DependsOn: deps,
		Objective: t.Task.Objective, DiffStat: t.DiffStat}
}

// page answers the tasks query: the tasks after req.After in list order,
// of req.Phase when set, at most req.Limit, within maxAnswerBytes.
func (c *campaign) page(req TasksRequest) (TasksPage, error) {
	limit := req.Limit
	switch {
	case limit < 0 || limit > maxPageTasks:
		return TasksPage{}, fmt.Errorf("limit is %d: want 1 to %d (0: %d)", limit, maxPageTasks, maxPageTasks)
	case limit == 0:
		limit = maxPageTasks
	}
	if req.Phase != "" && !slices.Contains(taskPhases, req.Phase) {
		return TasksPage{}, fmt.Errorf("phase %q is no task phase (%v)", req.Phase, taskPhases)
	}
	start := 0
	if req.After != "" {
		t, ok := c.byID[req.After]
		if !ok {
			return TasksPage{}, fmt.Errorf("after: %q is no task of the campaign", req.After)
		}
		start = slices.Index(c.tasks, t) + 1
	}
	p := TasksPage{Tasks: []TaskStatus{}}
	size := encodedSize(p) + 64 // the next cursor
	for _, t := range c.tasks[start:] {
		if req.Phase != "" && t.Phase != req.Phase {
			continue
		}
		ts := c.taskStatus(t)
		n := encodedSize(ts) + 1
		if len(p.Tasks) == limit || size+n > maxAnswerBytes {
			p.Next = p.Tasks[len(p.Tasks)-1].ID
			break
		}
		p.Tasks, size = append(p.Tasks, ts), size+n
	}
	return p, nil
}

var taskPhases = []string{TaskWaiting, TaskRunning, TaskQueued, TaskMerging, TaskAwaitingApproval, TaskMerged,
	TaskReturned, TaskBlocked, TaskFailed, TaskCancelled}

// detail answers the task query: one task in full with its goes.
func (c *campaign) detail(req TaskQuery) (TaskDetail, error) {
	t, ok := c.byID[req.ID]
	if !ok {
		return TaskDetail{}, fmt.Errorf("id: %q is no task of the campaign", req.ID)
	}
	d := TaskDetail{TaskStatus: c.taskStatus(t), VerifyCommand: t.Task.VerifyCommand, MaxRounds: t.Task.MaxRounds,
		ProtectedPaths: c.protected(t), Goes: []GoInfo{}}
	if d.ProtectedPaths == nil {
		d.ProtectedPaths = []string{}
	}
	if t.Source > 0 {
		d.TasksFile = c.sources[t.Source-1].Path + "@" + c.sources[t.Source-1].Commit
	}
	for n := 1; n <= t.Go; n++ {
		d.Goes = append(d.Goes, GoInfo{Go: n, WorkflowID: goWorkflowID(c.settings.ID, t.Task.ID, n)})
	}
	return d, nil
}
