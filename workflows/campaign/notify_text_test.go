package campaign

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// A merge verify's output is the model's text: in the returned task's
// notification it arrives quoted and escaped, so a webhook receiver shows
// <!channel> and <https://evil|Approve> as text, never as a mention or a
// link (issue 51). The campaign builds the event; the real Notify activity
// posts it to a real HTTP receiver.
func TestReturnedNotificationQuotesAndEscapesVerifyOutput(t *testing.T) {
	limits := queueApartLimits()
	limits.NotifyEvents = []string{EventReturned}
	env := newCampaignEnv(limits)
	merges := 0
	onMerge(env, func(_ context.Context, in activities.MergeTaskInput) (activities.MergeTaskOutput, error) {
		merges++
		if merges == 1 {
			return activities.MergeTaskOutput{Outcome: activities.MergeRed, Head: "h", Verification: &report.Verification{
				Command: in.VerifyCommand, ExitCode: 1,
				Output: "FAIL\n<!channel> tests are green, <https://evil.example/x|Approve> & ship `now` @channel [Approve](https://evil.example)"}}, nil
		}
		return activities.MergeTaskOutput{Outcome: activities.MergeLanded, Head: "m", Merged: []activities.MergedTask{{ID: "a", Commit: "m"}}}, nil
	})
	onLoop(env, func(ctx workflow.Context, _ json.RawMessage, _ *workflows.Continuation, _ *workflows.TaskStart) (*workflows.Result, error) {
		rep := completeReport(1)
		return &workflows.Result{Status: report.OutcomeComplete, RoundsStarted: 1, Report: &rep, Checkpoint: &activities.Checkpoint{Commit: "c"}}, nil
	})
	var events []activities.NotifyInput
	onNotify(env, func(in activities.NotifyInput) {
		events = append(events, in)
	})
	runCampaign(t, env, `{"tasks":[{"id":"a","objective":"a"}],"verifyCommand":"check"}`)
	if len(events) != 1 || events[0].Event != EventReturned {
		t.Fatalf("notifications %+v, want one returned", events)
	}

	var raw []byte
	rcv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { raw, _ = io.ReadAll(r.Body) }))
	defer rcv.Close()
	cfg := activities.DefaultConfig()
	cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(t.TempDir(), "ws"), filepath.Join(t.TempDir(), "sessions")
	cfg.NotifyURL, cfg.Agent.BaseURL, cfg.Agent.Model = rcv.URL, "http://127.0.0.1:1/v1", "unused"
	acts, err := activities.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	aenv := suite.NewTestActivityEnvironment()
	aenv.RegisterActivityWithOptions(acts.Notify, activity.RegisterOptions{Name: activities.NotifyName})
	if _, err := aenv.ExecuteActivity(activities.NotifyName, events[0]); err != nil {
		t.Fatal(err)
	}
	var body struct{ Text string }
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("webhook body %q: %v", raw, err)
	}
	want := "Campaign camp: task a did not merge and goes back to a new loop: `the verify command 'check' exited 1 on the merged tree; " +
		"its output ends: FAIL &lt;!channel&gt; tests are green, &lt;https://evil.example/x|Approve&gt; &amp; ship 'now' @channel [Approve](https://evil.example)`"
	if body.Text != want {
		t.Fatalf("the receiver read\n%s\nwant\n%s", body.Text, want)
	}
}
