package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// noDrainSuggestAt is the history length at which this test's server
// suggests continue-as-new (4,096 by default): a campaign of a few tasks
// continues as new several times, its loops running.
const noDrainSuggestAt = 40

// TestRealStackLoopsOutliveCampaignContinueAsNew (SPEC 39, loops outlive a
// run): on a dev server of its own that suggests continue-as-new early, a
// campaign of 8 tasks at maxParallel 4, whose loops answer slowly, moves to
// new runs while its loops run (3 or 4 runs as measured; at least one move
// is asserted, timing decides the rest); each loop's end reaches the run current when
// it ends, and every task merges.
func TestRealStackLoopsOutliveCampaignContinueAsNew(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dev, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{
		DynamicConfig: append(temporalserver.DynamicConfig(), fmt.Sprintf("limit.historyCount.suggestContinueAsNew=%d", noDrainSuggestAt))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Stop() })
	c, err := dev.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	bare, _ := bareRepo(t)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		m := campaignTaskPattern.FindStringSubmatch(tn.Prompt())
		if m == nil {
			return fakeopenai.Text("no task in the prompt")
		}
		if tn.Step() > 0 {
			return submit(completeArgs("task "+m[1]+" done", m[1]+" wrote its file"))
		}
		r := tool("write_file", map[string]string{"path": m[1] + ".txt", "content": m[1] + "\n"})
		r.Delay = 3 * time.Second // the loop runs while the campaign moves
		return r
	}), append(dev.Env(), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)...)
	e.client = c
	e.startWorker()

	var tasks []campaign.Task
	for i := range 8 {
		id := fmt.Sprintf("n%d", i)
		tasks = append(tasks, campaign.Task{ID: id, Objective: fmt.Sprintf("TASK %s: write %s.txt", id, id)})
	}
	four := 4
	id := "camp-nodrain"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 5 * time.Minute},
		campaign.CampaignWorkflowName, campaign.CampaignInput{Tasks: tasks, MaxParallel: &four, VerifyCommand: "true"})
	if err != nil {
		t.Fatal(err)
	}
	first := run.GetRunID() // Get follows the runs: GetRunID then names the last
	var res campaign.CampaignResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	for _, tr := range res.Tasks {
		if tr.Phase != campaign.TaskMerged {
			t.Fatalf("task %s ended %s (%s); result %s", tr.ID, tr.Phase, tr.LastFailure, res.Status)
		}
	}

	// Walk the runs: each continue-as-new's input, and the loops' reports
	// each run received.
	runID, runs, movedRunning, reports := first, 0, 0, 0
	record := map[string][2]string{"task-loop-reports-its-end": {id + "/n0", ""}}
	reportsAfterFirst := 0
	for runID != "" {
		runs++
		next := ""
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if s := ev.GetWorkflowExecutionSignaledEventAttributes(); s != nil && s.GetSignalName() == workflows.SignalTaskEnded {
				reports++
				if runs > 1 {
					reportsAfterFirst++
				}
			}
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
				var k campaign.CampaignContinuation
				if err := converter.GetDefaultDataConverter().FromPayload(a.GetInput().GetPayloads()[1], &k); err != nil {
					t.Fatal(err)
				}
				for _, task := range k.Tasks {
					if task.Phase == campaign.TaskRunning {
						movedRunning++
					}
				}
			}
		}
		record[fmt.Sprintf("campaign-nodrain-run%d", runs)] = [2]string{id, runID}
		runID = next
	}
	t.Logf("%d runs; %d loops carried running across the moves; %d loop reports, %d of them to a later run", runs, movedRunning, reports, reportsAfterFirst)
	// Every run (each continues as new with loops running, takes their
	// reports, watches the carried ones) and a loop that reported its end,
	// for the replay corpus.
	recordRuns(t, c, record)
	if runs < 2 || movedRunning == 0 || reports != 8 || reportsAfterFirst == 0 {
		t.Fatalf("%d runs, %d loops carried running, %d reports (%d after the first run); want at least 2 runs, loops carried running, every loop's report, some to a later run",
			runs, movedRunning, reports, reportsAfterFirst)
	}
}

// recordRuns writes the histories of the given runs (name: workflow id,
// run id) into RALPH_RECORD_HISTORIES, as recordHistories does.
func recordRuns(t *testing.T, c client.Client, runs map[string][2]string) {
	dir := os.Getenv("RALPH_RECORD_HISTORIES")
	if dir == "" {
		return
	}
	for name, run := range runs {
		hist := &historypb.History{}
		iter := c.GetWorkflowHistory(context.Background(), run[0], run[1], false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				t.Fatal(err)
			}
			hist.Events = append(hist.Events, ev)
		}
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
