package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// The independent reviewer (docs/guards.md#independent-reviewer) on the
// real stack: the reviewer (its own model on the same endpoint) sends the
// first completion back; its findings reach the next round as the handoff; the second completion, whose change it sees as a
// diff, is approved. The starter's first line names the reviewer and still
// says a worker reported completion.
func TestRealStackReviewerSendsBackOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.IsReview() {
			if tn.Round() == 1 {
				return fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "revise", Summary: "app.txt has one line",
					Findings: []string{"Add the line v2 to app.txt"}}))
			}
			if tn.Step() == 0 {
				return tool("run_command", map[string]string{"command": "echo tampered >> app.txt; cat app.txt"})
			}
			return fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "app.txt has both lines"}))
		}
		content := "v1\n"
		if tn.Round() == 2 {
			content = "v1\nv2\n"
		}
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "app.txt", "content": content})
		}
		return submit(completeArgs("app.txt written", "cat app.txt shows the lines"))
	}), "RALPH_GIT=local", "RALPH_REVIEW=on", "RALPH_REVIEW_MODEL=judge-model")
	e.startWorker()
	starterEnv := []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}
	out, code := runBinary(t, "starter", starterEnv, "run", "--workspace", "reviewed", "--objective", "write app.txt with v1 and v2")
	// The result text follows the progress lines; its first line is the headline.
	if code != 0 || !slices.Contains(strings.Split(out, "\n"), "An independent reviewer (judge-model) approved; a worker reported completion after 2 rounds.") {
		t.Fatalf("starter: exit %d\n%s", code, out)
	}
	var reviewPrompts, workerRound2 []string
	var reviews, total int
	for _, req := range e.model.Requests() {
		total++
		if req.IsReview() {
			reviews++
			if req.Chat.Model != "judge-model" {
				t.Errorf("a reviewer request went to %q", req.Chat.Model)
			}
			for _, tl := range req.Chat.Tools {
				if n := tl.Function.Name; n == "write_file" || n == "edit_file" || n == "submit_report" {
					t.Errorf("the reviewer was offered %s", n)
				}
			}
			if req.Step() == 0 {
				reviewPrompts = append(reviewPrompts, req.Prompt())
			}
			continue
		}
		if req.Chat.Model != "scripted-model" {
			t.Errorf("a worker request went to %q", req.Chat.Model)
		}
		if req.Round() == 2 && req.Step() == 0 {
			workerRound2 = append(workerRound2, req.Prompt())
		}
	}
	if reviews != 3 || len(reviewPrompts) != 2 || len(workerRound2) != 1 {
		t.Fatalf("reviewer requests %d, reviews %d, round-2 sessions %d", reviews, len(reviewPrompts), len(workerRound2))
	}
	if !strings.Contains(workerRound2[0], "A reviewer asked for revisions: app.txt has one line") || !strings.Contains(workerRound2[0], "Add the line v2 to app.txt") {
		t.Fatalf("round 2 prompt lacks the revise handoff:\n%s", workerRound2[0])
	}
	if !strings.Contains(reviewPrompts[1], "+v2") || !strings.Contains(reviewPrompts[1], "app.txt") {
		t.Fatalf("the second review's prompt lacks the run's change:\n%s", reviewPrompts[1])
	}
	if data, _ := os.ReadFile(filepath.Join(e.root, "reviewed", "app.txt")); string(data) != "v1\nv2\n" {
		t.Fatalf("app.txt = %q (the reviewer's command wrote to the workspace?)", data)
	}
	res, err := e.result(e.client.GetWorkflow(t.Context(), "ralph-reviewed", ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Review == nil || res.Review.Verdict != report.VerdictApprove || res.Review.Model != "judge-model" || res.Usage.ModelCalls != total {
		t.Fatalf("result %+v (usage must count all %d model calls, the reviewer's too)", res, total)
	}
	st := e.status("ralph-reviewed")
	if len(st.Rounds) != 2 || st.Rounds[0].Review != "revise" || st.Rounds[1].Review != "approve" {
		t.Fatalf("status rounds %+v", st.Rounds)
	}
	var reviewTranscripts int
	for _, f := range e.transcripts() {
		if strings.HasPrefix(filepath.Base(f), "review-") {
			reviewTranscripts++
		}
	}
	if reviewTranscripts != 2 {
		t.Fatalf("review transcripts: %d, want 2", reviewTranscripts)
	}
	e.noKeyAnywhere("ralph-reviewed")
}
