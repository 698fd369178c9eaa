package agent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// A model that edits, creates and deletes protected files through
// run_command (no sandbox here, so nothing stops the command itself) has its
// first report refused with the restored paths, not as a repair; it then
// reports honestly and the workspace holds the protected files as they were.
func TestProtectedPathsRestoredBeforeReport(t *testing.T) {
	done := fakeopenai.ReportArgs{Status: "complete", Summary: "Tests pass.", Evidence: []string{"pytest passed"}}
	honest := fakeopenai.ReportArgs{Status: "continue", Summary: "The test still fails.", NextSteps: []string{"Fix add()"}}
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("write_file", map[string]string{"path": "tests/test_add.py", "content": "assert True\n"}),
		call("run_command", map[string]string{"command": "echo 'assert True' > tests/test_add.py && rm tests/test_sub.py && echo new > tests/test_new.py && echo x > src.py"}),
		submit(done),
		submit(honest),
	}})
	h.req.ProtectedPaths = [][]string{{"tests/**"}, {"**/*.cfg"}}
	testkit.WriteFiles(t, h.req.Workspace, map[string]string{"tests/test_add.py": "assert add(1, 2) == 3\n", "tests/test_sub.py": "assert sub(3, 1) == 2\n"})
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Status != "continue" {
		t.Fatalf("accepted report %+v, want the honest continue", res.Report)
	}
	want := []string{"tests/test_add.py", "tests/test_new.py", "tests/test_sub.py"}
	if !slices.Equal(res.Restored, want) {
		t.Fatalf("Restored = %q, want %q", res.Restored, want)
	}
	reqs := h.requests()
	if got := lastMessage(reqs[1]).Content; !strings.Contains(got, `is protected (pattern "tests/**")`) {
		t.Fatalf("write_file result = %q", got)
	}
	refusal := lastMessage(reqs[3]).Content
	for _, frag := range []string{"error: Report not accepted: this round changed protected paths",
		"- tests/test_add.py\n- tests/test_new.py\n- tests/test_sub.py\n", "not a report error and costs no repair"} {
		if !strings.Contains(refusal, frag) {
			t.Errorf("refusal %q lacks %q", refusal, frag)
		}
	}
	ws := h.req.Workspace
	for name, content := range map[string]string{"tests/test_add.py": "assert add(1, 2) == 3\n", "tests/test_sub.py": "assert sub(3, 1) == 2\n", "src.py": "x\n"} {
		if data, _ := os.ReadFile(filepath.Join(ws, name)); string(data) != content {
			t.Errorf("%s = %q, want %q", name, data, content)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "tests/test_new.py")); err == nil {
		t.Error("a created protected file survived")
	}
	if ev := h.events.ofKind(agent.EventProtectedRestored); len(ev) != 1 || !slices.Equal(ev[0].Paths, want) {
		t.Errorf("protected_restored events %+v", ev)
	}
}

// A protected change made after the last report check (here: a session
// that fails) is restored when the session ends, so no checkpoint sees it.
func TestProtectedPathsRestoredWhenSessionFails(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]string{"command": "echo gone > verify.sh"}),
		fakeopenai.Status(401, "bad key"),
	}})
	h.req.ProtectedPaths = [][]string{{"verify.sh"}}
	testkit.WriteFiles(t, h.req.Workspace, map[string]string{"verify.sh": "go test ./...\n"})
	res, err := h.run()
	if err == nil {
		t.Fatal("want a failure")
	}
	if data, _ := os.ReadFile(filepath.Join(h.req.Workspace, "verify.sh")); string(data) != "go test ./...\n" {
		t.Fatalf("verify.sh = %q", data)
	}
	if !slices.Equal(res.Restored, []string{"verify.sh"}) {
		t.Fatalf("Restored = %q", res.Restored)
	}
}

// With nothing changed the round output says so with [] (never null).
func TestProtectedPathsNothingRestored(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	h.req.ProtectedPaths = [][]string{{"tests/**"}}
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Restored == nil || len(res.Restored) != 0 {
		t.Fatalf("Restored = %#v, want []", res.Restored)
	}
}

func reviewHarness(t *testing.T, script fakeopenai.Script) *harness {
	h := newHarness(t, script)
	h.req.Review = &agent.ReviewSubject{
		Report: report.Report{Status: "complete", Summary: "hello.txt written.", Evidence: []string{"cat hello.txt printed hello"}, NextSteps: []string{}},
		Diff:   "hello.txt | 1 +\n+hello", Base: "aaaa", Commit: "bbbb",
	}
	h.req.VerifyCommand = ""
	return h
}

// The reviewer is offered list_files, read_file, search_files, run_command
// and submit_review on every request: never a writing tool, never
// submit_report. Its prompt holds the objective, the completion and the diff.
func TestReviewerToolsAndPrompt(t *testing.T) {
	h := reviewHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("write_file", map[string]string{"path": "x.txt", "content": "x"}),
		fakeopenai.Tools(fakeopenai.SubmitReport(validContinue)),
		fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "Looks right."})),
	}})
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Review == nil || res.Review.Verdict != "approve" || res.Review.Model != "fake-model" || res.Review.SessionID != "test-session" ||
		res.Review.Findings == nil {
		t.Fatalf("Review = %+v", res.Review)
	}
	reqs := h.requests()
	for _, r := range reqs {
		if got, want := offeredTools(r), []string{"list_files", "read_file", "search_files", "run_command", "submit_review"}; !slices.Equal(got, want) {
			t.Fatalf("request %d offers %q, want %q", r.Index, got, want)
		}
	}
	prompt := reqs[0].Prompt()
	for _, frag := range []string{objective, "hello.txt written.", "hello.txt | 1 +\n+hello", "from the run's base aaaa to the completing commit bbbb",
		"No verify command applied", "workspace is read-only for you"} {
		if !strings.Contains(prompt, frag) {
			t.Errorf("reviewer prompt lacks %q", frag)
		}
	}
	if got := lastMessage(reqs[1]).Content; !strings.Contains(got, `unknown tool "write_file"`) {
		t.Errorf("write_file answer = %q", got)
	}
	if got := lastMessage(reqs[2]).Content; !strings.Contains(got, `unknown tool "submit_report"`) {
		t.Errorf("submit_report answer = %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.req.Workspace, "x.txt")); err == nil {
		t.Fatal("the reviewer wrote a file")
	}
}

// A revise needs findings, and the continue handoff built from it must fit
// the handoff cap: the reviewer is told and shortens it.
func TestReviewerReviseValidated(t *testing.T) {
	long := strings.Repeat("x", 400)
	h := reviewHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "revise", Summary: "Not done."})),
		fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "revise", Summary: "Not done.", Findings: []string{long}})),
		fakeopenai.Tools(fakeopenai.CallJSON("submit_review", map[string]any{"verdict": "revise", "summary": "Not done.", "findings": []string{"Add a test."}, "model": "x"})),
		fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "revise", Summary: "Not done.", Findings: []string{"Add a test."}})),
	}})
	h.req.MaxHandoffChars = 300
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Review == nil || !slices.Equal(res.Review.Findings, []string{"Add a test."}) {
		t.Fatalf("Review = %+v", res.Review)
	}
	reqs := h.requests()
	for i, frag := range map[int]string{
		1: "verdict revise needs at least one finding",
		2: "over the limit of 300",
		3: `unknown key "model"`,
	} {
		if got := lastMessage(reqs[i]).Content; !strings.Contains(got, "error: review rejected: ") || !strings.Contains(got, frag) {
			t.Errorf("request %d answer %q lacks %q", i, got, frag)
		}
	}
	handoff := report.RevisionHandoff(h.req.Review.Report, *res.Review)
	if err := report.Validate(handoff, 300); err != nil || handoff.Summary != "A reviewer asked for revisions: Not done." ||
		!slices.Equal(handoff.Evidence, []string{"cat hello.txt printed hello"}) {
		t.Fatalf("handoff %+v: %v", handoff, err)
	}
}

// A reviewer that never gives a valid verdict fails like a round.
func TestReviewerWithoutVerdictFails(t *testing.T) {
	h := reviewHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("I think it is fine.") }})
	_, err := h.run()
	wantChildFailure(t, err, "answered with text")
	reqs := h.requests()
	if got := lastMessage(reqs[len(reqs)-1]).Content; !strings.Contains(got, "Only submit_review is available now") {
		t.Fatalf("final reminder = %q", got)
	}
}

// Without bubblewrap nothing mounts the reviewer's workspace read-only, so
// whatever its commands change is restored when it ends.
func TestReviewerChangesRestoredWithoutSandbox(t *testing.T) {
	h := reviewHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]string{"command": "echo x > new.txt; echo y >> a.txt; rm b.txt"}),
		fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "Fine."})),
	}})
	testkit.WriteFiles(t, h.req.Workspace, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Restored, []string{"a.txt", "b.txt", "new.txt"}) {
		t.Fatalf("Restored = %q", res.Restored)
	}
	for name, content := range map[string]string{"a.txt": "a\n", "b.txt": "b\n"} {
		if data, _ := os.ReadFile(filepath.Join(h.req.Workspace, name)); string(data) != content {
			t.Errorf("%s = %q", name, data)
		}
	}
	if _, err := os.Stat(filepath.Join(h.req.Workspace, "new.txt")); err == nil {
		t.Error("the reviewer's new file survived")
	}
}

// Protected paths are checked again after verify passes: a change made
// while verify ran (here by the verify command itself, standing in for
// any process that is not stopped) refuses the complete report as the
// first check does, and the honest report after it is accepted.
func TestProtectedPathsCheckedAfterVerify(t *testing.T) {
	done := fakeopenai.ReportArgs{Status: "complete", Summary: "Tests pass.", Evidence: []string{"verify passed"}}
	honest := fakeopenai.ReportArgs{Status: "continue", Summary: "Not verified.", NextSteps: []string{"Fix it"}}
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(done), submit(honest)}})
	h.req.ProtectedPaths = [][]string{{"tests/**"}}
	h.req.VerifyCommand = "echo 'exit 0' > tests/run.sh"
	testkit.WriteFiles(t, h.req.Workspace, map[string]string{"tests/run.sh": "exit 1\n"})
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Status != "continue" || res.Verification != nil {
		t.Fatalf("accepted report %+v (verification %+v), want the honest continue", res.Report, res.Verification)
	}
	if refusal := lastMessage(h.requests()[1]).Content; !strings.Contains(refusal, "this round changed protected paths") {
		t.Fatalf("the complete report's answer = %q, want the protected-path refusal", refusal)
	}
	if data, _ := os.ReadFile(filepath.Join(h.req.Workspace, "tests/run.sh")); string(data) != "exit 1\n" {
		t.Fatalf("tests/run.sh = %q, want it restored", data)
	}
}
