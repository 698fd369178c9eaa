package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// scaleTasks and scaleSuggestAt size the scale test: 300 one-round tasks
// make about 7,000 campaign history events, so a continue-as-new suggested
// at 1,500 events moves the campaign at least twice (SPEC 39).
const (
	scaleTasks     = 300
	scaleParallel  = 8
	scaleSuggestAt = 1500
)

// TestRealStackCampaignScale runs 300 one-round tasks at maxParallel 8 on a
// dev server of its own whose continue-as-new suggestion is lowered, and
// checks the campaign moved at least twice without a drain: at every move
// task loops were running, and every task merged. It logs the benchmark
// row of docs/benchmarks.md (tasks per minute, events and history bytes per
// task, the largest event).
func TestRealStackCampaignScale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{
		DynamicConfig: append(temporalserver.DynamicConfig(), fmt.Sprintf("limit.historyCount.suggestContinueAsNew=%d", scaleSuggestAt)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := srv.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	bare, _ := bareRepo(t)
	e := newEnv(t, agentScript(campaignModel), "TEMPORAL_ADDRESS="+srv.Address, "TEMPORAL_NAMESPACE="+srv.Namespace,
		"RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)
	e.client = c
	e.startWorker()

	tasks := make([]campaign.Task, scaleTasks)
	for i := range tasks {
		id := fmt.Sprintf("t%03d", i)
		tasks[i] = campaign.Task{ID: id, Objective: fmt.Sprintf("TASK %s: write %s.txt", id, id)}
	}
	parallel, batch := scaleParallel, 4
	id := "camp-scale"
	started := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 30 * time.Minute},
		campaign.CampaignWorkflowName, campaign.CampaignInput{Tasks: tasks, MaxParallel: &parallel, MergeBatch: &batch, VerifyCommand: "true"})
	if err != nil {
		t.Fatal(err)
	}
	var res campaign.CampaignResult
	gctx, cancel := context.WithTimeout(ctx, 25*time.Minute)
	defer cancel()
	if err := run.Get(gctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	elapsed := time.Since(started)
	merged := 0
	for _, tr := range res.Tasks {
		if tr.Phase == campaign.TaskMerged {
			merged++
		}
	}
	if res.Status != campaign.CampaignComplete || merged != scaleTasks {
		t.Fatalf("campaign ended %s with %d of %d merged", res.Status, merged, scaleTasks)
	}

	runs := campaignRuns(t, c, srv.Namespace, id)
	loops := taskLoops(t, c, srv.Namespace, id)
	if len(runs) < 3 {
		t.Fatalf("the campaign ran %d run(s); want at least two continue-as-new", len(runs))
	}
	// No drain: at every move, loops were running (started before it, ended
	// after it).
	for _, r := range runs[:len(runs)-1] {
		at := r.GetCloseTime().AsTime()
		running := 0
		for _, l := range loops {
			if l.GetStartTime().AsTime().Before(at) && l.GetCloseTime().AsTime().After(at) {
				running++
			}
		}
		if running == 0 {
			t.Errorf("run %s continued as new at %s with no task loop running: it drained", r.GetExecution().GetRunId(), at.Format(time.RFC3339Nano))
		}
		t.Logf("run %s moved with %d loop(s) running", r.GetExecution().GetRunId(), running)
	}
	if peak := peakRunning(loops); peak > scaleParallel {
		t.Errorf("%d task loops ran at once; maxParallel is %d", peak, scaleParallel)
	}

	var events, bytes int64
	largest := 0
	for _, r := range runs {
		events += r.GetHistoryLength()
		bytes += r.GetHistorySizeBytes()
		if n := largestEvent(t, c, id, r.GetExecution().GetRunId()); n > largest {
			largest = n
		}
	}
	if largest > 1<<20 {
		t.Errorf("the largest event is %d bytes, over 1 MiB", largest)
	}
	t.Logf("benchmark: %d tasks, maxParallel %d, mergeBatch %d: %.1f tasks/min (%s), %d runs, %.1f events and %.0f history bytes per task, largest event %d bytes",
		scaleTasks, scaleParallel, batch, float64(scaleTasks)/elapsed.Minutes(), elapsed.Round(time.Second), len(runs),
		float64(events)/scaleTasks, float64(bytes)/scaleTasks, largest)
}

// campaignRuns lists the campaign's runs, oldest first, once visibility
// shows them all closed.
func campaignRuns(t *testing.T, c client.Client, ns, id string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	return listClosed(t, c, ns, fmt.Sprintf("WorkflowId = '%s'", id), func(list []*workflowpb.WorkflowExecutionInfo) bool {
		return slices.ContainsFunc(list, func(i *workflowpb.WorkflowExecutionInfo) bool {
			return i.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		})
	})
}

// taskLoops lists the campaign's task loops once visibility shows one per
// task, closed.
func taskLoops(t *testing.T, c client.Client, ns, id string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	query := fmt.Sprintf("%s = '%s' AND WorkflowType = '%s'", workflows.SearchAttrCampaign, id, workflows.WorkflowName)
	return listClosed(t, c, ns, query, func(list []*workflowpb.WorkflowExecutionInfo) bool { return len(list) >= scaleTasks })
}

// listClosed pages a visibility query until done says the list is whole
// and every listed execution is closed.
func listClosed(t *testing.T, c client.Client, ns, query string, done func([]*workflowpb.WorkflowExecutionInfo) bool) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	var list []*workflowpb.WorkflowExecutionInfo
	err := wait.For(context.Background(), time.Minute, 500*time.Millisecond, func(ctx context.Context) error {
		list = nil
		var token []byte
		for {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: query, NextPageToken: token, PageSize: 1000})
			if err != nil {
				return err
			}
			list = append(list, resp.GetExecutions()...)
			if token = resp.GetNextPageToken(); len(token) == 0 {
				break
			}
		}
		for _, i := range list {
			if i.GetCloseTime() == nil {
				return fmt.Errorf("%s still open", i.GetExecution().GetWorkflowId())
			}
		}
		if !done(list) {
			return fmt.Errorf("%d listed", len(list))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %q: %v", query, err)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].GetStartTime().AsTime().Before(list[j].GetStartTime().AsTime()) })
	return list
}

// peakRunning is the most loops that ran at once.
func peakRunning(loops []*workflowpb.WorkflowExecutionInfo) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, l := range loops {
		edges = append(edges, edge{l.GetStartTime().AsTime(), 1}, edge{l.GetCloseTime().AsTime(), -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta // an end before a start at the same instant
		}
		return edges[i].at.Before(edges[j].at)
	})
	peak, now := 0, 0
	for _, e := range edges {
		now += e.delta
		peak = max(peak, now)
	}
	return peak
}

// largestEvent is the size of the run's largest history event, a bound on
// the largest payload it carried.
func largestEvent(t *testing.T, c client.Client, id, runID string) int {
	t.Helper()
	largest := 0
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, proto.Size(ev))
	}
	return largest
}
