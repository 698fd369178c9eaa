package activities_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
	"github.com/ralph-temporal/ralph/report"
)

// A round under protected paths (git local, real bubblewrap): the command
// that edits the protected test fails on its read-only mount, the file it
// creates under tests/ is removed again, the first complete is refused with
// the list, and the checkpoint holds the round's work but no protected
// change. Then the reviewer (its own model) sees the run's change cut at
// the budget, is offered no writing tool, cannot write the workspace, and
// approves.
func TestProtectedRoundThenReview(t *testing.T) {
	big := strings.Repeat("line of the change\n", 200)
	var reviewTools [][]string
	script := fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.IsReview() {
			reviewTools = append(reviewTools, toolsOf(req))
			if req.Step() == 0 {
				return fakeopenai.Tools(fakeopenai.CallJSON("run_command", map[string]string{"command": "echo x >> notes.txt; echo y > new.txt; rm tests/a_test.sh"}))
			}
			return fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "notes.txt is there."}))
		}
		switch req.Step() {
		case 0:
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "notes.txt", "content": big}))
		case 1:
			return fakeopenai.Tools(fakeopenai.CallJSON("run_command", map[string]string{"command": "echo 'exit 0' > tests/a_test.sh; echo 'exit 0' > tests/b_test.sh"}))
		default:
			return fakeopenai.Tools(fakeopenai.SubmitReport(validComplete))
		}
	}}
	f := newFixture(t, script, context.Background(), func(c *activities.Config) {
		c.Git.Mode = gitws.ModeLocal
		c.Sandbox.Mode = sandbox.ModeBwrap
		c.ReviewModel = "judge-model"
		c.ReviewDiffChars = 600
	})
	dir := filepath.Join(f.cfg.WorkspaceRoot, "guarded")
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "a_test.sh"), []byte("exit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := roundInput("guarded")
	in.ProtectedPaths = [][]string{{"tests/**"}}
	out, err := f.run(in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Report.Status != "complete" || !slices.Equal(out.Restored, []string{"tests/b_test.sh"}) || out.Checkpoint == nil {
		t.Fatalf("round output %+v", out)
	}
	reqs := f.srv.Requests()
	if got := reqs[2].Chat.Messages[len(reqs[2].Chat.Messages)-1].Content; !strings.Contains(got, "tests/a_test.sh: Read-only file system") {
		t.Errorf("the edit of the read-only protected file succeeded: %q", got)
	}
	if got := reqs[3].Chat.Messages[len(reqs[3].Chat.Messages)-1].Content; !strings.Contains(got, "Report not accepted") || !strings.Contains(got, "- tests/b_test.sh") {
		t.Errorf("refusal %q", got)
	}
	cp := out.Checkpoint
	if files := testkit.Git(t, dir, "diff", "--name-only", cp.Parent, cp.Commit); files != "notes.txt\ntests/a_test.sh" && files != "notes.txt" {
		t.Fatalf("checkpoint changes %q", files)
	}
	if got := testkit.Git(t, dir, "show", cp.Commit+":tests/a_test.sh"); got != "exit 1" {
		t.Fatalf("checkpoint holds tests/a_test.sh = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "tests", "b_test.sh")); err == nil {
		t.Fatal("a created protected file is still there")
	}

	val, err := f.env.ExecuteActivity(activities.ReviewCompletionName, activities.ReviewInput{
		Objective: in.Objective, Round: in.Round, MaxRounds: in.MaxRounds, Workspace: "guarded", Report: out.Report,
		BaseCommit: cp.Parent, Commit: cp.Commit, MaxHandoffChars: 16384,
	})
	if err != nil {
		t.Fatal(err)
	}
	var rv activities.ReviewOutput
	if err := val.Get(&rv); err != nil {
		t.Fatal(err)
	}
	if rv.Review.Verdict != report.VerdictApprove || rv.Review.Model != "judge-model" || rv.Review.SessionID != rv.SessionID || rv.Usage.ModelCalls != 2 {
		t.Fatalf("review output %+v", rv)
	}
	for _, names := range reviewTools {
		if !slices.Equal(names, []string{"list_files", "read_file", "search_files", "run_command", "submit_review"}) {
			t.Fatalf("reviewer offered %q", names)
		}
	}
	var first fakeopenai.Request
	for _, r := range f.srv.Requests() {
		if r.IsReview() {
			if r.Chat.Model != "judge-model" {
				t.Fatalf("reviewer request to model %q", r.Chat.Model)
			}
			if first.Raw == nil {
				first = r
			}
		}
	}
	prompt := first.Chat.Messages[1].Content
	start := strings.Index(prompt, "to the completing commit "+cp.Commit+"):\n")
	end := strings.Index(prompt, "\n\nBounds of this review")
	if start < 0 || end < 0 {
		t.Fatalf("no change in the reviewer prompt:\n%s", prompt)
	}
	diff := prompt[start+len("to the completing commit "+cp.Commit+"):\n") : end]
	if n := len([]rune(diff)); n > 600 || n < 500 {
		t.Fatalf("the change shown is %d characters, want at most the budget of 600 (and close to it)", n)
	}
	if !strings.Contains(diff, "notes.txt") || !regexp.MustCompile(`… \[diff cut: \d+ of \d+ characters shown\]`).MatchString(diff) {
		t.Fatalf("change shown:\n%s", diff)
	}
	if got := first.Chat.Messages[len(first.Chat.Messages)-1].Content; got == "" {
		t.Fatal("empty prompt")
	}
	// The reviewer's command could not write anything.
	if data, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(data) != big {
		t.Fatal("the reviewer changed notes.txt")
	}
	for _, p := range []string{"new.txt"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Fatalf("the reviewer created %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tests", "a_test.sh")); err != nil {
		t.Fatal("the reviewer deleted tests/a_test.sh")
	}
	if st := testkit.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("work tree after the review: %q", st)
	}
	var reviewTranscripts int
	for _, file := range f.transcripts("guarded") {
		if strings.HasPrefix(filepath.Base(file), "review-2-attempt-1-"+rv.SessionID) {
			reviewTranscripts++
		}
	}
	if reviewTranscripts != 1 {
		t.Fatalf("review transcripts: %d", reviewTranscripts)
	}
}

func toolsOf(r fakeopenai.Request) []string {
	var names []string
	for _, t := range r.Chat.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// A 429 with a long Retry-After during the review defers it (the workflow
// waits and runs it again) instead of failing the verified completion.
func TestReviewDeferredByTheProvider(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.RateLimited("120")}}, context.Background(), nil)
	in := activities.ReviewInput{Objective: "Write notes.txt.", Round: 2, MaxRounds: 5, Workspace: "review-deferred",
		Report:          report.Report{Status: "complete", Summary: "Done.", Evidence: []string{"notes.txt exists"}, NextSteps: []string{}},
		MaxHandoffChars: 16384, Deferrable: true}
	val, err := f.env.ExecuteActivity(activities.ReviewCompletionName, in)
	if err != nil {
		t.Fatalf("a deferred review failed: %v", err)
	}
	var rv activities.ReviewOutput
	if err := val.Get(&rv); err != nil {
		t.Fatal(err)
	}
	if rv.Deferred == nil || *rv.Deferred != (activities.Deferred{Reason: activities.DeferRateLimited, RetryAfterSeconds: 120}) ||
		rv.Review.Verdict != "" || rv.Usage.ModelCalls != 0 || rv.SessionID == "" {
		t.Fatalf("review output %+v (deferred %+v)", rv, rv.Deferred)
	}
}
