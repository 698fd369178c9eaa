package campaign

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/workflows"
)

// CampaignGuideRequest is a campaign's guide update argument: the text for
// one task's loop, or for every running loop when task is empty.
type CampaignGuideRequest struct {
	Task string `json:"task,omitempty"`
	Text string `json:"text"`
}

// registerGuide installs the campaign's guide update: the text goes as a
// SignalGuide to the running loop(s), whose next round reads it.
func (c *campaign) registerGuide(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, workflows.UpdateGuide, c.onGuide,
		workflow.UpdateHandlerOptions{Validator: c.validateGuide}); err != nil {
		return fmt.Errorf("register the %s update: %w", workflows.UpdateGuide, err)
	}
	return nil
}

func (c *campaign) validateGuide(req CampaignGuideRequest) error {
	if c.finished != "" {
		return errors.New("the campaign has already finished")
	}
	switch n := utf8.RuneCountInString(strings.TrimSpace(req.Text)); {
	case n == 0:
		return errors.New("text is empty")
	case n > workflows.MaxGuidanceChars:
		return fmt.Errorf("text is %d characters, over the limit of %d", n, workflows.MaxGuidanceChars)
	}
	if len(c.guided(req.Task)) > 0 {
		return nil
	}
	if req.Task == "" {
		return errors.New("no task's loop is running")
	}
	t, ok := c.byID[req.Task]
	if !ok {
		return fmt.Errorf("task %q is not in the campaign", req.Task)
	}
	return fmt.Errorf("task %q has no running loop (phase %s)", req.Task, t.Phase)
}

func (c *campaign) onGuide(ctx workflow.Context, req CampaignGuideRequest) (CampaignAck, error) {
	text := strings.TrimSpace(req.Text)
	for _, t := range c.guided(req.Task) {
		if t.preparing {
			t.keptGuidance = append(t.keptGuidance, text) // rides to the loop once it starts
			continue
		}
		workflow.SignalExternalWorkflow(ctx, t.WorkflowID, "", workflows.SignalGuide, workflows.GuideRequest{Text: text})
	}
	return c.ack(), nil
}

// guided are the running loops a guide for task (empty: every one) reaches.
func (c *campaign) guided(task string) []*taskState {
	var out []*taskState
	for _, t := range c.tasks {
		if t.Phase == TaskRunning && t.WorkflowID != "" && (task == "" || t.Task.ID == task) {
			out = append(out, t)
		}
	}
	return out
}
