package starterapp

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/client"
)

// queuePollers is what the pre-start check found on a task queue: all
// pollers, those that can take a new run, and the current version new runs
// go to ("" when no deployment of the queue has one).
type queuePollers struct {
	all, takers int
	current     string // <deployment>.<build id>
}

// pollers counts the workers polling the workflow task queue and those
// that can take a new run: with Worker Versioning a new run goes to its
// deployment's current version, so only that version's pollers count (a
// drained old build's workers polling the queue take no new run); without
// a current version, only unversioned pollers do.
func (s *session) pollers(ctx context.Context, tq string) (queuePollers, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := s.c.DescribeTaskQueue(qctx, tq, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return queuePollers{}, err
	}
	current := map[string]string{}
	for _, p := range resp.GetPollers() {
		name := p.GetDeploymentOptions().GetDeploymentName()
		if _, seen := current[name]; seen || !versioned(p) {
			continue
		}
		desc, err := s.c.WorkerDeploymentClient().GetHandle(name).Describe(qctx, client.WorkerDeploymentDescribeOptions{})
		if err != nil {
			return queuePollers{}, fmt.Errorf("describe worker deployment %s: %w", name, err)
		}
		current[name] = ""
		if v := desc.Info.RoutingConfig.CurrentVersion; v != nil {
			current[name] = v.BuildID
		}
	}
	return countTakers(resp.GetPollers(), current), nil
}

func versioned(p *taskqueuepb.PollerInfo) bool {
	return p.GetDeploymentOptions().GetWorkerVersioningMode() == enumspb.WORKER_VERSIONING_MODE_VERSIONED
}

// countTakers applies the routing of new runs to pollers; current maps each
// deployment polling the queue to its current build id ("" for none).
func countTakers(pollers []*taskqueuepb.PollerInfo, current map[string]string) queuePollers {
	q := queuePollers{all: len(pollers)}
	for name, build := range current {
		if build != "" {
			q.current = name + "." + build
		}
	}
	for _, p := range pollers {
		o := p.GetDeploymentOptions()
		switch {
		case q.current == "" && !versioned(p):
			q.takers++
		case q.current != "" && versioned(p) && o.GetDeploymentName()+"."+o.GetBuildId() == q.current:
			q.takers++
		}
	}
	return q
}

// promoteGrace is how long the pre-start check waits for a polling
// versioned worker to become able to take the run: a worker that just
// started makes its version current right after its first poll, so for a
// moment it polls but nothing routes to it. ralph-local waits for its
// worker to be promoted (workerapp.Start) before it starts the run; this is
// for a user's script or compose file that starts both at once.
const promoteGrace = 10 * time.Second

// takers is the pre-start check: the pollers that can take a new run on
// tq, asked again for up to promoteGrace while workers poll but none can.
func (s *session) takers(ctx context.Context, tq string) (queuePollers, error) {
	deadline := time.Now().Add(promoteGrace)
	for {
		q, err := s.pollers(ctx, tq)
		if err != nil || q.takers > 0 || q.all == 0 || time.Now().After(deadline) {
			return q, err
		}
		select {
		case <-ctx.Done():
			return q, nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}
