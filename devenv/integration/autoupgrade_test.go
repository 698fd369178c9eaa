package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// The compose upgrade (docs/operations.md): build A runs a round, build B
// starts with RALPH_SET_CURRENT=always and the default auto-upgrade, A is
// stopped mid-round. The running run is not stranded: its round runs again
// and the run completes on B, in the same workflow run.
func TestRealStackAutoUpgradeMovesARunningRun(t *testing.T) {
	t.Parallel()
	deployment := fmt.Sprintf("it-autoupgrade-%d", time.Now().UnixNano())
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo started > started.txt; while [ ! -e release ]; do sleep 0.1; done"})
		case tn.Round() == 1:
			return submit(continueArgs("round 1 done", "finish"))
		default:
			return submit(completeArgs("done", "it ran"))
		}
	}), "RALPH_DEPLOYMENT_NAME="+deployment)
	a := e.startWorker("RALPH_BUILD_ID=build-a", "RALPH_WORKER_STOP_TIMEOUT_SECONDS=1")
	run := e.start("autoupgrade", `{"objective":"long run","workspace":"long"}`)
	waitForFile(t, filepath.Join(e.root, "long", "started.txt"), time.Minute)

	// B is current once startWorker returns (it logs that it polls after promoting).
	b := e.startWorker("RALPH_BUILD_ID=build-b", "RALPH_SET_CURRENT=always")
	e.drain(a)
	if err := os.WriteFile(filepath.Join(e.root, "long", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	firstRun := run.GetRunID()
	if res, err := e.result(run); err != nil || res.Status != "complete" || res.RoundsStarted != 2 {
		t.Fatalf("run: %+v, %v\nworker B:\n%s", res, err, tail(b.out.String(), 3000))
	}
	if got := run.GetRunID(); got != firstRun {
		t.Fatalf("the run continued as new (%s -> %s); want it to move in place", firstRun, got)
	}
	builds := workflowTaskBuilds(t, e, "autoupgrade", firstRun)
	if len(builds) < 2 || builds[0] != "build-a" || builds[len(builds)-1] != "build-b" {
		t.Fatalf("workflow tasks completed by builds %v, want A first and B last", builds)
	}
}

// workflowTaskBuilds lists the build of each completed workflow task of a run.
func workflowTaskBuilds(t *testing.T, e *env, id, runID string) []string {
	t.Helper()
	iter := e.client.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var builds []string
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			builds = append(builds, strings.TrimSpace(a.GetDeploymentVersion().GetBuildId()))
		}
	}
	return builds
}
