package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
