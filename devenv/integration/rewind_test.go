package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
)

// A 4-round run with git checkpoints, rewound to round 1: it goes on at
// round 2 with round 1's report as the handoff and round 1's tree (checked
// on the host when that session makes its first model call), while what
// rounds 2-4 did is kept on the rewind ref. Bad --round values exit 2.
func TestRealStackRewindToRoundOne(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var rewoundPrompt string
	var rewoundFiles []string
	var ws string
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		r := tn.Round()
		if tn.Session == 1 && tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "round-" + string(rune('0'+r)) + ".txt", "content": "work\n"})
		}
		if tn.Session == 1 {
			return submit(continueArgs("round "+string(rune('0'+r))+" done", "go on"))
		}
		// Round 2 again, after the rewind.
		mu.Lock()
		if rewoundPrompt == "" {
			rewoundPrompt = tn.Prompt()
			entries, _ := os.ReadDir(ws)
			for _, en := range entries {
				rewoundFiles = append(rewoundFiles, en.Name())
			}
		}
		mu.Unlock()
		return submit(completeArgs("finished after the rewind", "round-1.txt exists"))
	}), "RALPH_GIT=local")
	ws = filepath.Join(e.root, "rw")
	e.startWorker()
	id := "rewind-four"
	run := e.start(id, `{"objective":"four rounds then rewind","maxRounds":4,"workspace":"rw"}`)
	if res, err := e.result(run); err != nil || res.Status != "budget-limited" || res.RoundsStarted != 4 {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	round1 := e.status(id).Rounds[0].Commit
	head4 := gitOut(t, ws, "rev-parse", "HEAD")

	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	for _, bad := range []struct{ round, want string }{
		{"0", "--round"}, {"4", "between 1 and 3"}, {"9", "between 1 and 3"}, {"two", "--round"},
	} {
		out, code := runBinary(t, "starter", starterEnv, "rewind", "--workflow-id", id, "--round", bad.round)
		if code != 2 || !strings.Contains(out, bad.want) {
			t.Fatalf("rewind --round %s: exit %d, want 2 naming %q; output:\n%s", bad.round, code, bad.want, out)
		}
	}
	out, code := runBinary(t, "starter", starterEnv, "rewind", "--workflow-id", id, "--round", "1", "--reason", "round 2 went wrong")
	if code != 0 {
		t.Fatalf("rewind --round 1: exit %d\n%s", code, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var res workflows.Result
	if err := e.client.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil || res.Status != "complete" || res.RoundsStarted != 2 {
		t.Fatalf("after the rewind: %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(rewoundPrompt, "Round 2 of 4") || !strings.Contains(rewoundPrompt, "round 1 done") || strings.Contains(rewoundPrompt, "round 3 done") {
		t.Fatalf("the rewound round's prompt lacks round 1's handoff:\n%s", rewoundPrompt)
	}
	for _, f := range rewoundFiles {
		if f == "round-2.txt" || f == "round-3.txt" || f == "round-4.txt" {
			t.Fatalf("the rewound round started on a tree with %s (files %v), want round 1's", f, rewoundFiles)
		}
	}
	ref := "refs/ralph/abandoned/" + id + "/rewind-1"
	if got := gitOut(t, ws, "rev-parse", ref); got != head4 {
		t.Fatalf("%s = %s, want round 4's checkpoint %s", ref, got, head4)
	}
	// The rewound round changed nothing: the workspace is round 1's checkpoint.
	if head := gitOut(t, ws, "rev-parse", "HEAD"); head != round1 {
		t.Fatalf("HEAD after the rewound round = %s, want round 1's checkpoint %s", head, round1)
	}
	// The reset is recorded with its reason.
	iter := e.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	found := false
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW &&
			strings.Contains(a.GetFailure().GetMessage(), "round 2 went wrong") {
			found = true
		}
	}
	if !found {
		t.Error("the reset and its reason are not in the new run's history")
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
