package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
)

// A rewind to the round before the running one (K = current - 1): round 2
// wrote a file it never committed and is still running. The rewound round 2
// starts on round 1's checkpoint with the file gone (kept on the rewind ref),
// and the model calls the killed round paid for stay in the run's usage.
func TestRealStackRewindToThePreviousRound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "one.txt", "content": "round 1\n"})
		case tn.Round() == 1:
			return submit(continueArgs("round 1 done", "go on"))
		case tn.Session == 1 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "partial.txt", "content": "uncommitted\n"})
		case tn.Session == 1:
			return tool("run_command", map[string]any{"command": "echo started > started.txt; sleep 300"})
		default:
			return submit(completeArgs("finished after the rewind", "one.txt exists"))
		}
	}), "RALPH_GIT=local")
	ws := filepath.Join(e.root, "prev")
	e.startWorker()
	id := "rewind-previous"
	e.start(id, `{"objective":"rewind the running round","maxRounds":4,"workspace":"prev"}`)
	waitForFile(t, filepath.Join(ws, "started.txt"), time.Minute)
	round1 := e.status(id).Rounds[0].Commit

	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	out, code := runBinary(t, "starter", starterEnv, "rewind", "--workflow-id", id, "--round", "1")
	if code != 0 {
		t.Fatalf("rewind --round 1 while round 2 runs: exit %d\n%s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res workflows.Result
	if err := e.client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Status != "complete" || res.RoundsStarted != 2 {
		t.Fatalf("after the rewind: %+v, %v", res, err)
	}
	if head := gitOut(t, ws, "rev-parse", "HEAD"); head != round1 {
		t.Fatalf("HEAD = %s, want round 1's checkpoint %s", head, round1)
	}
	if status := gitOut(t, ws, "status", "--porcelain"); strings.Contains(status, "partial.txt") {
		t.Fatalf("the killed round's file is still in the workspace: %q", status)
	}
	ref := "refs/ralph/abandoned/" + id + "/rewind-1"
	if got := gitOut(t, ws, "show", ref+":partial.txt"); got != "uncommitted" {
		t.Fatalf("%s:partial.txt = %q, want the killed round's file", ref, got)
	}
	// Round 1: 2 model calls; the rewound round 2: 1; the killed round 2:
	// 1 or 2, as far as its last heartbeat got (it heartbeats soon after each
	// model answer). Without the killed round's: 3.
	if res.Usage.ModelCalls < 4 {
		t.Fatalf("usage %+v: the killed round's model calls are not counted", res.Usage)
	}
}
