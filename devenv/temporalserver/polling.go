package temporalserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/wait"
)

// pollingInterval is how often WaitPolling asks the server.
const pollingInterval = 50 * time.Millisecond

// WaitPolling waits until the worker process pid polls both the workflow and
// the activity tasks of queue (the SDK names pollers "<pid>@<host>@"), so a
// caller knows that very worker serves, not merely some worker. It gives up
// when ctx ends or exited is closed (the process died first).
func WaitPolling(ctx context.Context, c client.Client, queue string, pid int, exited <-chan struct{}) error {
	want := strconv.Itoa(pid) + "@"
	err := wait.Until(ctx, pollingInterval, func(ctx context.Context) error {
		select {
		case <-exited:
			return wait.Final(fmt.Errorf("worker pid %d exited before polling task queue %s", pid, queue))
		default:
		}
		return polling(ctx, c, queue, want)
	})
	var timedOut *wait.TimedOut
	if errors.As(err, &timedOut) {
		return fmt.Errorf("worker pid %d is not polling task queue %s: %w", pid, queue, err)
	}
	return err
}

// polling says which task type of queue has no poller named identityPrefix…
func polling(ctx context.Context, c client.Client, queue, identityPrefix string) error {
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.DescribeTaskQueue(ctx, queue, typ)
		if err != nil {
			return err
		}
		found := false
		for _, p := range resp.GetPollers() {
			if strings.HasPrefix(p.GetIdentity(), identityPrefix) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("no %s poller %s… yet", typ, identityPrefix)
		}
	}
	return nil
}
