package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// TestRealStackRateLimitWaitIsDurableAndVisible: the provider answers the
// second request of round 1 with a 429 asking for 75 s. The session ends
// the round as deferred, the run shows phase waiting (status query and the
// RalphPhase search attribute through the temporal CLI), nothing reaches the
// provider during the wait, and then a new session of round 1 finds what the
// deferred one wrote and completes the run.
func TestRealStackRateLimitWaitIsDurableAndVisible(t *testing.T) {
	t.Parallel()
	const retryAfter = 75 * time.Second
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Session == 1 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "wip.txt", "content": "half of the work\n"})
		case tn.Session == 1:
			return fakeopenai.RateLimited("75")
		case tn.Step() == 0:
			return tool("read_file", map[string]string{"path": "wip.txt"})
		case strings.Contains(tn.LastToolOutput(), "half of the work"):
			return submit(completeArgs("finished what the deferred session began", "wip.txt was there"))
		default:
			return submit(fakeopenai.ReportArgs{Status: "blocked", Summary: "wip.txt is gone", Evidence: []string{},
				NextSteps: []string{}, Blocker: "the deferred session's work was lost"})
		}
	}))
	e.startWorker()
	const id = "rate-limited"
	run := e.start(id, `{"objective":"finish wip.txt","workspace":"rate-limited"}`)
	e.waitPhase(id, "waiting", 60*time.Second)
	st := e.status(id)
	until, err := time.Parse(time.RFC3339, st.WaitingUntil)
	if err != nil || st.WaitReason != "rate-limited" || st.Round != 1 || st.Deferrals != 1 {
		t.Fatalf("status while waiting = %+v (%v)", st, err)
	}
	out, err := temporalCLI(t, "workflow", "list", "--query", "RalphPhase='waiting'")
	if err != nil || !strings.Contains(out, id) {
		t.Fatalf("temporal workflow list --query \"RalphPhase='waiting'\": %v\n%s", err, out)
	}
	res, err := e.result(run)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	reqs := e.model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests reached the provider, want 4 (2 per session)", len(reqs))
	}
	// The 429 was request 1; the next request is the new session's first,
	// after the whole wait: none arrived while the run announced it waited.
	if gap := reqs[2].Time.Sub(reqs[1].Time); gap < retryAfter {
		t.Fatalf("a request reached the provider %s after the 429 that asked for %s", gap, retryAfter)
	}
	if reqs[2].Time.Before(until.Add(-time.Second)) { // waitingUntil is whole seconds
		t.Fatalf("request at %s, before the announced end of the wait %s", reqs[2].Time, until)
	}
	files := e.transcripts()
	if len(files) != 2 {
		t.Fatalf("transcripts = %v, want one per session", files)
	}
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), "round-1-attempt-1-") {
			t.Fatalf("transcript %s: a deferral is not a round attempt", f)
		}
	}
	final := e.status(id)
	if len(final.Rounds) != 1 || final.Rounds[0].Model != "scripted-model" || final.Rounds[0].Deferrals != 1 || final.WaitingUntil != "" {
		t.Fatalf("final status = %+v", final)
	}
	if res.Usage.ModelCalls != 3 {
		t.Fatalf("usage = %+v, want the deferred session's completed call counted", res.Usage)
	}
	e.noKeyAnywhere(id)
}

// TestRealStackFallbackReplacesAnUnavailablePrimary: the primary model only
// answers 503; after its retries the same session goes on with the
// fallback model, and the round records that model.
func TestRealStackFallbackReplacesAnUnavailablePrimary(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Chat.Model == "scripted-model":
			return fakeopenai.Unavailable("")
		case tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "done.txt", "content": "by the fallback\n"})
		default:
			return submit(completeArgs("the fallback did it", "done.txt written"))
		}
	}), "RALPH_FALLBACK_MODELS=fallback-model", "RALPH_MODEL_RETRIES=1")
	e.startWorker()
	const id = "fallback"
	res, err := e.result(e.start(id, `{"objective":"write done.txt","workspace":"fallback"}`))
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("result = %+v, %v", res, err)
	}
	var models []string
	for _, r := range e.model.Requests() {
		models = append(models, r.Chat.Model)
	}
	if got := strings.Join(models, " "); got != "scripted-model scripted-model fallback-model fallback-model" {
		t.Fatalf("models per request: %s", got)
	}
	files := e.transcripts()
	if len(files) != 1 {
		t.Fatalf("transcripts = %v: the fallback must take over within the same session", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(data), `"kind":"model_fallback"`) || !strings.Contains(string(data), `"model":"fallback-model"`) {
		t.Fatalf("transcript lacks the fallback: %v", err)
	}
	if st := e.status(id); len(st.Rounds) != 1 || st.Rounds[0].Model != "fallback-model" {
		t.Fatalf("status rounds = %+v, want the fallback recorded as the report's model", st.Rounds)
	}
}

// usageScript hands off every round with one call reported as 900 prompt
// and 100 completion tokens.
func usageScript(tn turn) fakeopenai.Response {
	r := submit(continueArgs(fmt.Sprintf("round %d", tn.Round()), "more"))
	r.Usage = &openai.Usage{PromptTokens: 900, CompletionTokens: 100}
	return r
}
