package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/internal/runusage"
	"github.com/ralph-temporal/ralph/usage"
)

// CheckTaskLoopsName is the activity a campaign runs, now and then, on the
// task loops an earlier run of it started (SPEC 39, loops outlive a run):
// a loop tells its campaign when it ends, but one terminated by an operator
// or timed out cannot, and must not leave its task running for ever.
const CheckTaskLoopsName = "CheckTaskLoops"

// maxLoopFailureChars cuts a closed loop's failure text; past
// maxLoopEndsBytes of results and failures a check answers what it read
// (the next check reads the rest), so its answer stays far under 1 MiB.
const (
	maxLoopFailureChars = 2000
	maxLoopEndsBytes    = 256 << 10
)

// CheckTaskLoopsInput names the loops (workflow ids) to look at.
type CheckTaskLoopsInput struct {
	WorkflowIDs []string `json:"workflowIds"`
}

// CheckTaskLoopsOutput lists the loops that are closed; the rest run.
type CheckTaskLoopsOutput struct {
	Ended []TaskLoopEnd `json:"ended"`
}

// TaskLoopEnd is how a closed loop ended: Status is the workflow's close
// status (completed, failed, canceled, terminated, timed-out, not-found);
// Result is a completed loop's result as recorded; Failure and RunUsage
// are a failed or cancelled loop's error and the whole usage its details
// carry (nil when they carry none).
type TaskLoopEnd struct {
	WorkflowID string          `json:"workflowId"`
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result,omitempty"`
	Failure    string          `json:"failure,omitempty"`
	RunUsage   *usage.Usage    `json:"runUsage,omitempty"`
}

// UseClient gives the activities the worker's Temporal client, which
// CheckTaskLoops reads loops through; without one it fails (retried).
func (a *Activities) UseClient(c client.Client) { a.client = c }

// CheckTaskLoops is TaskLoops.Check through the worker's client.
func (a *Activities) CheckTaskLoops(ctx context.Context, in CheckTaskLoopsInput) (CheckTaskLoopsOutput, error) {
	if a.client == nil {
		return CheckTaskLoopsOutput{}, errors.New("check task loops: the worker has no Temporal client")
	}
	return TaskLoops{Client: a.client}.Check(ctx, in)
}

// TaskLoops reads a campaign's task loops through a Temporal client.
type TaskLoops struct {
	Client client.Client
}

// Check describes each loop (its latest run: a loop's own
// continue-as-new is followed) and, for a closed one, reads how it ended.
// One short call per check instead of one waiting activity per loop: a
// thousand carried loops would otherwise hold a thousand activity slots
// and pending activities for hours, for the rare loop that cannot signal.
func (l TaskLoops) Check(ctx context.Context, in CheckTaskLoopsInput) (CheckTaskLoopsOutput, error) {
	out := CheckTaskLoopsOutput{Ended: []TaskLoopEnd{}}
	size := 0
	for _, id := range in.WorkflowIDs {
		if size > maxLoopEndsBytes {
			break // the rest are read by the next check
		}
		activity.RecordHeartbeat(ctx, id)
		end, closed, err := l.loopEnd(ctx, id)
		if err != nil {
			return CheckTaskLoopsOutput{}, err
		}
		if closed {
			out.Ended = append(out.Ended, end)
			size += len(end.Result) + len(end.Failure)
		}
	}
	return out, nil
}

// loopEnd is how the loop id ended, closed false while it runs.
func (l TaskLoops) loopEnd(ctx context.Context, id string) (TaskLoopEnd, bool, error) {
	end := TaskLoopEnd{WorkflowID: id}
	desc, err := l.Client.DescribeWorkflow(ctx, id, "")
	var missing *serviceerror.NotFound
	switch {
	case errors.As(err, &missing):
		end.Status, end.Failure = "not-found", "the loop's workflow is not found"
		return end, true, nil
	case err != nil:
		return end, false, fmt.Errorf("describe %s: %w", id, err)
	}
	d := desc.RawResponse
	info := d.GetWorkflowExecutionInfo()
	status := info.GetStatus()
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
		enumspb.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
		return end, false, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		end.Status, end.Failure = "terminated", "the loop's workflow was terminated"
		return end, true, nil
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		end.Status, end.Failure = "timed-out", "the loop's workflow timed out"
		return end, true, nil
	}
	run := l.Client.GetWorkflow(ctx, id, info.GetExecution().GetRunId())
	var raw json.RawMessage
	err = run.Get(ctx, &raw)
	switch {
	case err == nil:
		end.Status, end.Result = "completed", raw
	case status == enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		end.Status, end.Failure, end.RunUsage = "canceled", runes.Prefix(closeProblem(err), maxLoopFailureChars), detailsUsage(err)
	default:
		end.Status, end.Failure, end.RunUsage = "failed", runes.Prefix(closeProblem(err), maxLoopFailureChars), detailsUsage(err)
	}
	return end, true, nil
}

// closeProblem is what a closed loop's error says, without the client's
// wrapping ("workflow execution error (...)").
func closeProblem(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "canceled"
	}
	return err.Error()
}

// detailsUsage is the whole run's usage a Ralph failure or cancel carries
// in its details (their runUsage field), nil when they carry none.
func detailsUsage(err error) *usage.Usage {
	if u, ok := runusage.Of(err); ok {
		return &u
	}
	return nil
}
