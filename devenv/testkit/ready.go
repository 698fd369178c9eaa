// Package testsupport holds helpers for the integration suite, the
// benchmarks and the local demo harness; the worker and starter binaries
// never import it.
package testkit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// readyPollInterval is how often WaitPolling asks the server.
const readyPollInterval = 50 * time.Millisecond

// WaitPolling waits until the worker process pid polls both the workflow and
// the activity tasks of queue (the SDK names pollers "<pid>@<host>@"), so a
// caller knows that very worker serves, not merely some worker. It gives up
// when ctx ends or exited is closed (the process died first).
func WaitPolling(ctx context.Context, c client.Client, queue string, pid int, exited <-chan struct{}) error {
	want := strconv.Itoa(pid) + "@"
	for {
		if polling(ctx, c, queue, want) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("worker pid %d exited before polling task queue %s", pid, queue)
		case <-ctx.Done():
			return fmt.Errorf("worker pid %d is not polling task queue %s: %w", pid, queue, ctx.Err())
		case <-time.After(readyPollInterval):
		}
	}
}

func polling(ctx context.Context, c client.Client, queue, identityPrefix string) bool {
	for _, typ := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := c.DescribeTaskQueue(ctx, queue, typ)
		if err != nil {
			return false
		}
		found := false
		for _, p := range resp.GetPollers() {
			if strings.HasPrefix(p.GetIdentity(), identityPrefix) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
