package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/workflows"
)

// CampaignAck is a campaign update's answer: what it changed, never the
// task list (the status query has it).
type CampaignAck struct {
	Phase         string `json:"phase"`
	Tasks         int    `json:"tasks"`
	StopRequested bool   `json:"stopRequested"`
}

// register installs the campaign's status query and updates; each
// validator refuses, naming why, an update that does not apply.
func (c *campaign) register(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, workflows.StatusQueryName, func() (CampaignStatus, error) {
		return c.snapshot(), nil
	}); err != nil {
		return fmt.Errorf("register the %s query: %w", workflows.StatusQueryName, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryTasks, c.page); err != nil {
		return fmt.Errorf("register the %s query: %w", QueryTasks, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryTask, c.detail); err != nil {
		return fmt.Errorf("register the %s query: %w", QueryTask, err)
	}
	if err := workflow.SetQueryHandler(ctx, QueryPlan, c.planQuery); err != nil {
		return fmt.Errorf("register the %s query: %w", QueryPlan, err)
	}
	return workflows.SetUpdates(ctx, []workflows.Update{
		{Name: workflows.UpdatePause, Handler: c.onPause, Validator: c.validatePause},
		{Name: workflows.UpdateResume, Handler: c.onResume, Validator: c.validateResume},
		{Name: workflows.UpdateStop, Handler: c.onStop, Validator: c.validateStop},
		{Name: UpdateAddTasks, Handler: c.onAddTasks, Validator: c.validateAddTasks},
		{Name: workflows.UpdateApprove, Handler: c.onApprove, Validator: c.validateApprove},
		{Name: workflows.UpdateReject, Handler: c.onReject, Validator: c.validateReject},
	})
}

func (c *campaign) ack() CampaignAck {
	return CampaignAck{Phase: c.phase(), Tasks: len(c.tasks), StopRequested: c.stopping}
}

func (c *campaign) open() error {
	switch {
	case c.finished != "":
		return errors.New("the campaign has already finished")
	case c.settings.ID == "":
		return errors.New("the campaign is still starting")
	}
	return nil
}

func (c *campaign) validatePause() error {
	if err := c.open(); err != nil {
		return err
	}
	if c.paused {
		return errors.New("the campaign is already paused")
	}
	return nil
}

func (c *campaign) onPause(ctx workflow.Context) (CampaignAck, error) {
	c.paused, c.dirty = true, true
	c.upsert(ctx)
	return c.ack(), nil
}

func (c *campaign) validateResume() error {
	if err := c.open(); err != nil {
		return err
	}
	switch {
	case c.recheck:
		return errors.New("the campaign is checking its integration head again after a resume; the status query says when it is done")
	case !c.paused && c.pauseReason == "":
		return errors.New("the campaign is not paused")
	}
	return nil
}

// onResume ends an operator's pause and a git pause at once; a head-red
// pause ends only once the queue verified the head again and it passed
// (still red: the queue stays paused and notifies again).
func (c *campaign) onResume(ctx workflow.Context) (CampaignAck, error) {
	if c.pauseReason == PauseHeadRed {
		c.paused, c.recheck, c.dirty = false, true, true
		c.upsert(ctx)
		return c.ack(), nil
	}
	c.paused, c.pauseReason, c.pauseOutput, c.dirty = false, "", "", true
	c.upsert(ctx)
	return c.ack(), nil
}

func (c *campaign) validateStop(req workflows.StopRequest) error {
	if err := c.open(); err != nil {
		return err
	}
	if c.stopping {
		return errors.New("a stop is already pending: the running loops are stopping and queued merges still land")
	}
	if n := utf8.RuneCountInString(req.Reason); n > workflows.MaxStopReasonChars {
		return fmt.Errorf("reason is %d characters, over the limit of %d", n, workflows.MaxStopReasonChars)
	}
	return nil
}

// onStop starts no new task or go and asks every running loop to stop as
// the stop update would (its round finishes); queued merges still land.
func (c *campaign) onStop(ctx workflow.Context, req workflows.StopRequest) (CampaignAck, error) {
	c.stopping, c.dirty = true, true
	stop := workflows.StopRequest{Reason: strings.TrimSpace(req.Reason)}
	for _, t := range c.tasks {
		switch {
		case t.Phase != TaskRunning || t.WorkflowID == "":
		case t.preparing:
			t.keptStop = &stop // delivered, or the start prevented, once prepared
		default:
			workflow.SignalExternalWorkflow(ctx, t.WorkflowID, "", workflows.SignalStop, stop)
		}
	}
	return c.ack(), nil
}

func (c *campaign) validateAddTasks(req json.RawMessage) error {
	if err := c.open(); err != nil {
		return err
	}
	if c.stopping {
		return errors.New("the campaign is stopping: start a new campaign for more tasks")
	}
	_, _, err := c.parseAdded(req)
	return err
}

// parseAdded reads an add-tasks argument ({"tasks": [Task]} or
// {"tasksFile": path}, an AddTasksRequest) as strictly as the campaign's
// input: unknown keys, here or in a task, are refused by name. It returns
// the inline tasks, or the tasks file to read.
func (c *campaign) parseAdded(req json.RawMessage) ([]Task, string, error) {
	fields, err := objectFields(req, []string{fieldTasks, fieldTasksFile}, `{"tasks": [{"id": "...", "objective": "..."}]} or {"tasksFile": "path"}`)
	if err != nil {
		return nil, "", err
	}
	file, err := parseTasksFile(fields[fieldTasks], fields[fieldTasksFile])
	if err != nil || file != "" {
		return nil, file, err
	}
	existing := make([]Task, len(c.tasks))
	for i, t := range c.tasks {
		existing[i] = t.Task
	}
	tasks, err := parseInlineTasks(fields[fieldTasks], c.limits, existing)
	if err != nil {
		return nil, "", err
	}
	return tasks, "", checkCarried(c.tasks, tasks, fieldTasks)
}

// onAddTasks adds the tasks; a tasksFile is read at the integration head
// (the update fails, naming why, when it is no valid task list).
func (c *campaign) onAddTasks(ctx workflow.Context, req json.RawMessage) (CampaignAck, error) {
	tasks, file, err := c.parseAdded(req)
	if err != nil {
		return CampaignAck{}, err
	}
	source := 0
	if file != "" {
		if tasks, source, err = c.readTasks(ctx, file, fieldTasksFile); err != nil {
			return CampaignAck{}, err
		}
	}
	c.add(tasks, source)
	return c.ack(), nil
}

// awaiting is the task waiting for approval that name names.
func (c *campaign) awaiting(name string) error {
	if err := c.open(); err != nil {
		return err
	}
	t := c.byID[name]
	switch {
	case name == "":
		return errors.New("task is required: name the task whose merge waits for approval")
	case t == nil:
		return fmt.Errorf("task %q is no task of the campaign", name)
	case t.Phase != TaskAwaitingApproval:
		return fmt.Errorf("task %q is %s, not awaiting approval", name, t.Phase)
	case c.decisions[name] != nil:
		return fmt.Errorf("task %q already has an answer", name)
	}
	return nil
}

func (c *campaign) onApprove(_ workflow.Context, req TaskRequest) (CampaignAck, error) {
	if req.Task == "" && c.planning() {
		c.wave.answer, c.dirty = &planAnswer{approved: true, tasks: req.Tasks}, true
		return c.ack(), nil
	}
	c.decide(req.Task, &decision{approved: true})
	return c.ack(), nil
}

func (c *campaign) onReject(_ workflow.Context, req RejectRequest) (CampaignAck, error) {
	if req.Task == "" && c.planning() {
		c.wave.answer, c.dirty = &planAnswer{reason: strings.TrimSpace(req.Reason)}, true
		return c.ack(), nil
	}
	c.decide(req.Task, &decision{reason: strings.TrimSpace(req.Reason)})
	return c.ack(), nil
}

func (c *campaign) decide(task string, d *decision) {
	if c.decisions == nil {
		c.decisions = map[string]*decision{}
	}
	c.decisions[task], c.dirty = d, true
}
