package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/workflows"
)

// parseWaveObjective reads a planning campaign's objective: exclusive with
// tasks and tasksFile ("" when none is given).
func parseWaveObjective(fields map[string]json.RawMessage, limits activities.Limits) (string, error) {
	raw := fields[fieldObjective]
	if isNull(raw) {
		return "", nil
	}
	for _, other := range []string{fieldTasks, fieldTasksFile} {
		if !isNull(fields[other]) {
			return "", inputErr(fieldObjective, "and %s are both given: a campaign with an objective plans its own tasks in waves; send one", other)
		}
	}
	return parseObjective(raw, limits.MaxObjectiveChars)
}

// parseMaxWaves reads maxWaves (a planning campaign's only) and checks the
// approval mode against the kind of campaign.
func parseMaxWaves(raw json.RawMessage, st campaignSettings, limits activities.Limits) (int, error) {
	if st.Objective == "" {
		switch {
		case !isNull(raw):
			return 0, inputErr(fieldMaxWaves, "applies only to a campaign with an objective (it has tasks)")
		case st.Approve == ApprovePlan || st.Approve == ApprovePlanMerge:
			return 0, inputErr(fieldApprove, "%q applies only to a campaign with an objective (a task list has no plan to approve)", st.Approve)
		}
		return 0, nil
	}
	ceiling := max(maxWavesCeiling(limits), 1)
	return parseCount(fieldMaxWaves, raw, ceiling, min(DefaultMaxWaves, ceiling), "RALPH_MAX_WAVES")
}

// planAwaiting refuses a plan answer when no plan waits for one.
func (c *campaign) planAwaiting() error {
	if err := c.open(); err != nil {
		return err
	}
	switch {
	case c.wave.pending == nil:
		return fmt.Errorf("no wave's plan awaits approval (the campaign is %s); name a task to answer its merge", c.phase())
	case c.wave.answer != nil:
		return errors.New("the plan already has an answer")
	}
	return nil
}

// validatePlanApprove: approve {} runs the plan; approve {"tasks": [...]}
// runs that list instead, refused naming the rule it breaks.
func (c *campaign) validatePlanApprove(tasks []Task) error {
	if err := c.planAwaiting(); err != nil {
		return err
	}
	if tasks == nil {
		return nil
	}
	return c.checkPlan(plan.Plan{Status: plan.StatusTasks, Summary: c.wave.pending.Summary, Tasks: tasks})
}

func (c *campaign) validateApprove(req TaskRequest) error {
	switch {
	case req.Task == "" && c.planning():
		return c.validatePlanApprove(req.Tasks)
	case req.Tasks != nil:
		return errors.New("tasks: only a wave's plan approval (no task named) takes a task list")
	}
	return c.awaiting(req.Task)
}

func (c *campaign) validateReject(req RejectRequest) error {
	var err error
	if req.Task == "" && c.planning() {
		err = c.planAwaiting()
	} else {
		err = c.awaiting(req.Task)
	}
	if err != nil {
		return err
	}
	switch n := utf8.RuneCountInString(strings.TrimSpace(req.Reason)); {
	case n == 0 && req.Task == "":
		return errors.New("reason is required: it guides the next planning round")
	case n == 0:
		return errors.New("reason is required: it goes back to the task's loop as what failed")
	case n > workflows.MaxStopReasonChars:
		return fmt.Errorf("reason is %d characters, over the limit of %d", n, workflows.MaxStopReasonChars)
	}
	return nil
}
