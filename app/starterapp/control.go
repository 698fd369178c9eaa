package starterapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/workflows"
)

// controlTimeout bounds one operator update: the workflow answers at once,
// so only an absent worker makes it wait.
const controlTimeout = 30 * time.Second

// control sends an operator update (stop, pause, resume, extend) to a run
// or a campaign and prints the acknowledgement it answers with. A refusal says why and exits ExitFailed.
func (s *session) control(ctx context.Context, name string, args ...any) int {
	id := s.cmd.workflowID
	// The answer is printed as it came: a run answers an Ack, a campaign
	// its own acknowledgement.
	var st json.RawMessage
	if !s.update(ctx, name, &st, args...) {
		return ExitFailed
	}
	switch name {
	case workflows.UpdateStop:
		s.infof("stop accepted: workflow %s ends after its running round", id)
	case workflows.UpdatePause:
		s.infof("pause accepted: workflow %s starts no new round until resume", id)
	case workflows.UpdateResume:
		s.infof("resume accepted: workflow %s goes on", id)
	case workflows.UpdateExtend:
		s.infof("extend accepted: workflow %s has its new budgets (see `starter status %s`)", id, id)
	}
	if err := writeJSON(s.Stdout, st); err != nil {
		s.errorf("encode the answer: %v", err)
		return ExitFailed
	}
	return ExitComplete
}

// update sends an update and decodes its answer into answer; false: it
// failed or was refused, and the reason is printed.
func (s *session) update(ctx context.Context, name string, answer any, args ...any) bool {
	id := s.cmd.workflowID
	uctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	h, err := s.c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: name, Args: args, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(uctx, answer)
	}
	if err == nil {
		return true
	}
	var app *temporal.ApplicationError
	switch {
	case isNotFound(err):
		s.errorf("%s: nothing to %s", s.closedOrMissing(ctx, id), name)
	case errors.As(err, &app):
		s.errorf("workflow %s refused %s: %s", id, name, app.Message())
	case errors.Is(uctx.Err(), context.DeadlineExceeded):
		s.errorf("%s on workflow %s got no answer within %s%s", name, id, controlTimeout, s.describeHint(ctx, id))
	default:
		s.errorf("%s on workflow %s: %v", name, id, err)
	}
	return false
}

// closedOrMissing says why a run cannot take an update: it closed (and how)
// or it does not exist.
func (s *session) closedOrMissing(ctx context.Context, id string) string {
	info, err := s.describe(ctx, id, "")
	if err != nil {
		return fmt.Sprintf("no workflow with id %q in namespace %s", id, s.namespace)
	}
	return fmt.Sprintf("workflow %s has already closed (%s)", id, statusName(info.GetStatus()))
}

// statusName is a workflow execution status as people read it ("completed").
func statusName(st enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "WORKFLOW_EXECUTION_STATUS_"))
}
