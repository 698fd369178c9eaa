package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// A model that edits the protected test (read-only under bubblewrap) and
// creates another under tests/ has its completion refused with the restored
// list, then fails the verify command against the untouched test, and
// finally hands off honestly. The test file is unchanged on disk and in
// every checkpoint, and no checkpoint ever holds the created file.
func TestRealStackProtectedTestStaysHonest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Round() == 2 {
			return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{Status: "blocked", Summary: "the test fails",
				Blocker: "add() cannot be fixed without changing tests/check.sh, which is protected"}))
		}
		switch tn.Step() {
		case 0:
			return tool("run_command", map[string]string{"command": "echo 'exit 0' > tests/check.sh; echo 'exit 0' > tests/extra.sh; cat tests/check.sh"})
		case 1, 2:
			return submit(completeArgs("the check passes", "sh tests/check.sh exits 0"))
		default:
			return submit(continueArgs("the check still fails", "make add() pass tests/check.sh"))
		}
	}), "RALPH_GIT=local", "RALPH_SANDBOX=bwrap")
	ws := filepath.Join(e.root, "guarded")
	if err := os.MkdirAll(filepath.Join(ws, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "tests", "check.sh"), []byte("exit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.startWorker()
	res, err := e.result(e.start("guarded", `{"objective":"make tests/check.sh pass","workspace":"guarded","protectedPaths":["tests/**"],"verifyCommand":"sh tests/check.sh"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBlocked {
		t.Fatalf("result %+v", res)
	}
	var sawReadOnly, sawRefusal, sawVerifyFail bool
	for _, req := range e.model.Requests() {
		out := req.LastToolOutput()
		sawReadOnly = sawReadOnly || strings.Contains(out, "tests/check.sh: Read-only file system")
		sawRefusal = sawRefusal || strings.Contains(out, "Report not accepted: this round changed protected paths") && strings.Contains(out, "- tests/extra.sh")
		sawVerifyFail = sawVerifyFail || strings.Contains(out, "Completion refused: the verify command failed")
	}
	if !sawReadOnly || !sawRefusal || !sawVerifyFail {
		t.Fatalf("read-only %v, refusal %v, verify refused %v", sawReadOnly, sawRefusal, sawVerifyFail)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "tests", "check.sh")); string(data) != "exit 1\n" {
		t.Fatalf("tests/check.sh on disk = %q", data)
	}
	if _, err := os.Stat(filepath.Join(ws, "tests", "extra.sh")); err == nil {
		t.Fatal("tests/extra.sh survived")
	}
	st := e.status("guarded")
	if len(st.Rounds) != 2 || !slices.Equal(st.Rounds[0].Restored, []string{"tests/extra.sh"}) {
		t.Fatalf("status rounds %+v", st.Rounds)
	}
	for _, r := range st.Rounds {
		if got := testkit.Git(t, ws, "show", r.Commit+":tests/check.sh"); got != "exit 1" {
			t.Fatalf("checkpoint %s holds tests/check.sh = %q", r.Commit, got)
		}
	}
	if log := testkit.Git(t, ws, "log", "--all", "--format=%H", "--", "tests/extra.sh"); log != "" {
		t.Fatalf("commits touching tests/extra.sh: %s", log)
	}
}
