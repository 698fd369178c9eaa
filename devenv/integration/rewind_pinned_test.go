package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
)

// A pinned run whose build is gone: started on build A with
// RALPH_VERSIONING_BEHAVIOR=pinned, rewound after A's workers stopped and
// build B became current. The rewind moves the reset run to B (a pinned
// versioning override; the starter says so) and the run finishes there.
func TestRealStackRewindAPinnedRunWhoseBuildIsGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1:
			return submit(continueArgs("round 1 done", "go on"))
		case tn.Session == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo started > started.txt; sleep 300"})
		case tn.Session == 1:
			return submit(continueArgs("round 2 done", "go on"))
		default:
			return submit(completeArgs("finished on build B", "it ran"))
		}
	}), "RALPH_VERSIONING_BEHAVIOR=pinned", "RALPH_WORKER_STOP_TIMEOUT_SECONDS=1")
	a := e.startWorker("RALPH_BUILD_ID=build-a")
	id := "rewind-pinned"
	e.start(id, `{"objective":"rewind a pinned run","maxRounds":4,"workspace":"pinned"}`)
	waitForFile(t, filepath.Join(e.root, "pinned", "started.txt"), time.Minute)

	b := e.startWorker("RALPH_BUILD_ID=build-b", "RALPH_SET_CURRENT=always")
	e.drain(a)
	assertPinned(t, e, id, "", e.queue, "build-a")
	// A stopped worker stays in the queue's poller list with its last poll
	// time; the starter counts a build gone once silent for 70 s.
	err := wait.For(context.Background(), 3*time.Minute, time.Second, func(ctx context.Context) error {
		resp, err := e.client.DescribeTaskQueue(ctx, e.queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err != nil {
			return err
		}
		for _, p := range resp.GetPollers() {
			if p.GetDeploymentOptions().GetBuildId() == "build-a" && time.Since(p.GetLastAccessTime().AsTime()) < 75*time.Second {
				return fmt.Errorf("build A polled at %s", p.GetLastAccessTime().AsTime())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	out, code := runBinary(t, "starter", starterEnv, "rewind", "--workflow-id", id, "--round", "1", "--keep-workspace")
	d, err := e.client.DescribeWorkflow(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	vi := d.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo()
	t.Logf("the reset run's versioning info: %v", vi)
	if code != 0 {
		t.Fatalf("rewind --round 1 of a run pinned to a gone build: exit %d\n%s", code, out)
	}
	wantSaid := fmt.Sprintf("pinned to %s.build-a, which no worker polls", e.queue)
	if !strings.Contains(out, wantSaid) || !strings.Contains(out, e.queue+".build-b") {
		t.Fatalf("the rewind did not say it moved the run (%q):\n%s", wantSaid, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var res workflows.Result
	if err := e.client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Status != "complete" || res.RoundsStarted != 2 {
		t.Fatalf("after the rewind: %+v, %v\nworker B:\n%s", res, err, tail(b.out.String(), 3000))
	}
	if got := vi.GetVersioningOverride().GetPinned().GetVersion().GetBuildId(); got != "build-b" {
		t.Fatalf("the reset run's versioning override pins it to %q, want build-b: %v", got, vi)
	}
	reset := d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	builds := workflowTaskBuilds(t, e, id, reset)
	if last := builds[len(builds)-1]; last != "build-b" {
		t.Fatalf("the reset run's workflow tasks were completed by builds %v, want B last", builds)
	}
}
