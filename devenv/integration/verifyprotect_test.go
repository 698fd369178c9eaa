package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// Candidate scoring is a round's verify (SPEC 38, "verify is verify
// everywhere"): with RALPH_CANDIDATE_SCORE=verify and test.sh protected,
// candidate 1 adds a build.sh that rewrites test.sh to exit 0 and the verify
// command runs `sh build.sh; sh test.sh`. Under bubblewrap the rewrite fails
// on the read-only mount, so candidate 1 scores as a failed verify and does
// not win: candidate 2, the smaller diff, is chosen. (Unprotected, candidate
// 1's score passes and it wins.)
func TestRealStackCandidateScoreProtectsPaths(t *testing.T) {
	t.Parallel()
	const realTest = "echo the real test fails; exit 1\n"
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Candidate() == 1 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "build.sh",
				"content": "# the build step\necho building\necho 'exit 0' > test.sh\n"})
		case tn.Candidate() == 2 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "notes.txt", "content": "half way\n"})
		}
		return submit(continueArgs("a step done", "make test.sh pass"))
	}), "RALPH_GIT=local", "RALPH_CANDIDATES=2", "RALPH_CANDIDATE_SCORE=verify")
	ws := filepath.Join(e.root, "gamed")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "test.sh"), []byte(realTest), 0o644); err != nil {
		t.Fatal(err)
	}
	e.startWorker()
	id := "cand-gamed-score"
	run := e.start(id, `{"objective":"make test.sh pass","workspace":"gamed","maxRounds":1,`+
		`"verifyCommand":"sh build.sh; sh test.sh","protectedPaths":["test.sh"]}`)
	res, err := e.result(run)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited {
		t.Fatalf("result %+v", res)
	}
	cands := e.status(id).Rounds[0].Candidates
	if len(cands) != 2 || cands[0].Chosen || cands[0].Verified || !cands[1].Chosen || !strings.Contains(cands[1].Reason, "smallest diff") {
		t.Fatalf("candidates %+v: want 1 unverified and not chosen, 2 chosen for the smaller diff", cands)
	}
	if got := testkit.Git(t, ws, "show", "HEAD:notes.txt"); got != "half way" || exists(ws, "build.sh") {
		t.Fatalf("the workspace holds candidate 1's work: notes.txt %q, build.sh present %v", got, exists(ws, "build.sh"))
	}
	if data, err := os.ReadFile(filepath.Join(ws, "test.sh")); err != nil || string(data) != realTest {
		t.Fatalf("test.sh on the host reads %q (%v)", data, err)
	}
	if got := testkit.Git(t, ws, "show", cands[0].Ref+":test.sh"); got+"\n" != realTest {
		t.Fatalf("candidate 1's kept commit holds test.sh %q", got)
	}
	e.noCandidateTrees(id)
}

// The merge verify of a campaign is a round's verify (SPEC 38): with the
// worker's RALPH_PROTECTED_PATHS=test.sh, task g (its own verify `true`)
// adds a build.sh that rewrites test.sh to exit 0 and completes; the merge
// verify `sh build.sh; sh test.sh` runs the real test (the rewrite fails on
// the read-only mount), so the merge does not land: the integration branch
// stays at main, g ends blocked with the verify's failure, and no test.sh on
// the host reads exit 0. (Unprotected, the merge lands.) Input and result
// are raw JSON, as a user's are.
func TestRealStackMergeVerifyProtectsPaths(t *testing.T) {
	t.Parallel()
	// The real test passes on main alone (a red head would pause the queue,
	// SPEC 39) and fails once the task's build.sh is in the tree.
	const realTest = "if [ -f build.sh ]; then echo the real test fails; exit 1; fi\n"
	bare, person := bareRepo(t)
	testkit.WriteFiles(t, person, map[string]string{"test.sh": realTest})
	testkit.Git(t, person, "add", "test.sh")
	testkit.Git(t, person, "commit", "-q", "-m", "the real test")
	testkit.Git(t, person, "push", "-q", "origin", "HEAD:main")
	main := testkit.Git(t, person, "rev-parse", "HEAD")

	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "build.sh", "content": "echo 'exit 0' > test.sh\n"})
		}
		return submit(completeArgs("build step added", "build.sh is there"))
	}), "RALPH_GIT=local", "RALPH_PROTECTED_PATHS=test.sh")
	id := "camp-gamed-verify"
	integration := filepath.Join(e.root, "campaigns", id, "integration.git")
	testkit.Git(t, person, "clone", "-q", "--bare", bare, integration)
	e.startWorker()

	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 10 * time.Minute,
	}, "Campaign", json.RawMessage(`{"tasks": [{"id": "g", "objective": "add a build step", "verifyCommand": "true"}],
		"verifyCommand": "sh build.sh; sh test.sh", "maxMergeAttempts": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Status string `json:"status"`
		Head   string `json:"head"`
		Tasks  []struct {
			ID, Phase, MergeCommit, LastFailure string
		} `json:"tasks"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil {
		t.Fatalf("campaign failed: %v", err)
	}
	if res.Status != "partial" || len(res.Tasks) != 1 || res.Tasks[0].Phase != "blocked" || res.Tasks[0].MergeCommit != "" ||
		!strings.Contains(res.Tasks[0].LastFailure, "`sh build.sh; sh test.sh` exited 1 on the merged tree") || res.Head != main {
		t.Fatalf("result %+v: want g blocked by the merge verify, the head still main's %s", res, main)
	}
	if got := testkit.Git(t, integration, "rev-parse", "refs/heads/ralph/campaigns/"+id+"/integration"); got != main {
		t.Fatalf("the integration branch moved to %s", got)
	}
	err = filepath.WalkDir(e.root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "test.sh" && !d.IsDir() {
			if data, rerr := os.ReadFile(path); rerr == nil && string(data) != realTest {
				t.Errorf("%s reads %q on the host", path, data)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
