package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/workflows"
)

// Two builds of the worker (different build ids) in one Worker Deployment,
// upgraded the way docs/operations.md says: a run started on build A stays
// pinned to A — every workflow task and round of it is completed by A's
// worker — while B is made current and takes the new runs; A drains, its
// run completes there, and only then is A stopped.
func TestRealStackRollingUpgradeKeepsRunsPinned(t *testing.T) {
	t.Parallel()
	deployment := fmt.Sprintf("it-upgrade-%d", time.Now().UnixNano())
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		// The long run's round 1 waits for the test to release it.
		case strings.Contains(tn.Prompt(), "long run") && tn.Round() == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo started > started.txt; while [ ! -e release ]; do sleep 0.1; done"})
		case strings.Contains(tn.Prompt(), "long run") && tn.Round() == 1:
			return submit(continueArgs("round 1 done", "finish"))
		default:
			return submit(completeArgs("done", "it ran"))
		}
	}), "RALPH_DEPLOYMENT_NAME="+deployment)

	// if-none: the first version becomes current. One round per workflow
	// run, so the long run continues as new after B is current.
	a := e.startWorker("RALPH_BUILD_ID=build-a", "RALPH_ROUNDS_PER_RUN=1", "RALPH_VERSIONING_BEHAVIOR=pinned")
	long := e.start("upgrade-long", `{"objective":"long run","workspace":"long"}`)
	waitForFile(t, filepath.Join(e.root, "long", "started.txt"), time.Minute)

	// Build B: started with RALPH_SET_CURRENT=never, so it only logs the
	// command; the operator promotes it with exactly that command.
	b := e.startWorker("RALPH_BUILD_ID=build-b", "RALPH_SET_CURRENT=never", "RALPH_VERSIONING_BEHAVIOR=pinned")
	wantCmd := "temporal worker deployment set-current-version --deployment-name " + deployment + " --build-id build-b"
	if !strings.Contains(b.out.String(), wantCmd) {
		t.Fatalf("worker B did not log the promote command %q:\n%s", wantCmd, tail(b.out.String(), 2000))
	}
	// The server refuses the promotion until it has seen B's pollers on the
	// task queue A serves ("missing active task queues"): an operator runs
	// the command again, and so does the test.
	err := wait.For(context.Background(), time.Minute, 500*time.Millisecond, func(context.Context) error {
		out, err := temporalCLI(t, append(strings.Fields(wantCmd)[1:], "--yes")...)
		switch {
		case err == nil:
			return nil
		case strings.Contains(out, "missing active task queues"):
			return fmt.Errorf("set-current-version: %v\n%s", err, out)
		default:
			return wait.Final(fmt.Errorf("set-current-version: %v\n%s", err, out))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh := e.start("upgrade-fresh", `{"objective":"fresh run","workspace":"fresh"}`)
	if res, err := e.result(fresh); err != nil || res.Status != "complete" {
		t.Fatalf("fresh run: %+v, %v", res, err)
	}
	assertServedBy(t, e, "upgrade-fresh", fresh.GetRunID(), "build-b", b)

	// The old run is still pinned to A and the old version is draining.
	assertPinned(t, e, "upgrade-long", long.GetRunID(), deployment, "build-a")
	out, err := temporalCLI(t, "worker", "deployment", "describe-version", "--deployment-name", deployment, "--build-id", "build-a")
	if err != nil || !strings.Contains(strings.ToLower(out), "draining") {
		t.Fatalf("describe-version of A while its run is open: %v\n%s", err, out)
	}
	// Get follows continue-as-new and moves GetRunID along: keep the first.
	firstRun := long.GetRunID()
	if err := os.WriteFile(filepath.Join(e.root, "long", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := e.result(long); err != nil || res.Status != "complete" || res.RoundsStarted != 2 {
		t.Fatalf("long run: %+v, %v", res, err)
	}
	assertServedBy(t, e, "upgrade-long", firstRun, "build-a", a)

	// Its continued run (round 2) moves to the current version B where the
	// server supports upgrade-on-continue-as-new, and stays on A where not.
	d, err := e.client.DescribeWorkflow(context.Background(), "upgrade-long", "")
	if err != nil {
		t.Fatal(err)
	}
	desc := d.RawResponse
	continued := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	if continued == firstRun {
		t.Fatal("the long run did not continue as new")
	}
	info, err := e.client.WorkflowService().GetSystemInfo(context.Background(), &workflowservice.GetSystemInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	switch upgradesAtContinueAsNew(info.GetServerVersion()) {
	case "yes":
		assertPinned(t, e, "upgrade-long", continued, deployment, "build-b")
		assertServedBy(t, e, "upgrade-long", continued, "build-b", b)
	case "no":
		t.Logf("server %s keeps a continued run on its build", info.GetServerVersion())
		assertPinned(t, e, "upgrade-long", continued, deployment, "build-a")
		assertServedBy(t, e, "upgrade-long", continued, "build-a", a)
	default:
		t.Logf("server %s: upgrade-on-continue-as-new support not known; the continued run was not checked", info.GetServerVersion())
	}
}

// upgradesAtContinueAsNew says whether a server honours the continue-as-new
// command's InitialVersioningBehavior: not 1.29.x (its API has no such
// field), yes from 1.32 (checked in the v1.32.2 source); between, unknown.
func upgradesAtContinueAsNew(serverVersion string) string {
	var major, minor int
	if _, err := fmt.Sscanf(serverVersion, "%d.%d", &major, &minor); err != nil || major != 1 {
		return "unknown"
	}
	switch {
	case minor <= 29:
		return "no"
	case minor >= 32:
		return "yes"
	}
	return "unknown"
}

// assertPinned checks what `temporal workflow describe` shows: the run is
// Pinned to deployment.buildID.
func assertPinned(t *testing.T, e *env, id, runID, deployment, buildID string) {
	t.Helper()
	d, err := e.client.DescribeWorkflow(context.Background(), id, runID)
	if err != nil {
		t.Fatal(err)
	}
	desc := d.RawResponse
	vi := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
	if vi.GetBehavior() != enumspb.VERSIONING_BEHAVIOR_PINNED || vi.GetDeploymentVersion().GetBuildId() != buildID ||
		vi.GetDeploymentVersion().GetDeploymentName() != deployment {
		t.Fatalf("%s: versioning info %v, want pinned to %s.%s", id, vi, deployment, buildID)
	}
}

// assertServedBy checks the run's history: every workflow task completed by
// buildID, every round started by the worker process p.
func assertServedBy(t *testing.T, e *env, id, runID, buildID string, p *process) {
	t.Helper()
	identity := strconv.Itoa(p.cmd.Process.Pid) + "@"
	iter := e.client.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	tasks, rounds := 0, 0
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			tasks++
			if got := a.GetDeploymentVersion().GetBuildId(); got != buildID {
				t.Errorf("%s: workflow task %d completed by build %q, want %q", id, ev.GetEventId(), got, buildID)
			}
			if !strings.HasPrefix(a.GetIdentity(), identity) {
				t.Errorf("%s: workflow task %d completed by %q, want the worker %s", id, ev.GetEventId(), a.GetIdentity(), identity)
			}
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			rounds++
			if !strings.HasPrefix(a.GetIdentity(), identity) {
				t.Errorf("%s: round started by %q, want the worker %s", id, a.GetIdentity(), identity)
			}
		}
	}
	if tasks == 0 || rounds == 0 {
		t.Fatalf("%s: %d workflow tasks and %d rounds in history", id, tasks, rounds)
	}
	_ = workflows.WorkflowName
}
