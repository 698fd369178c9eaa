package activities_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// receiver is a webhook receiver that answers 500 to the first failures
// POSTs and records every request.
type receiver struct {
	mu       sync.Mutex
	failures int
	bodies   []map[string]any
	keys     []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
	if r.failures > 0 {
		r.failures--
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func TestNotifyPostsTheEvent(t *testing.T) {
	rcv := &receiver{failures: 1}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	secret := srv.URL + "/hooks/T000/SECRET-TOKEN"
	f := newFixture(t, fakeopenai.Script{}, context.Background(), func(c *activities.Config) {
		c.NotifyURL, c.UIURL = secret, "http://ui.example:8233/"
	})
	in := activities.NotifyInput{Event: "complete", WorkflowID: "fix/tests", RunID: "run-1", Round: 3, Status: "complete",
		Text: "Ralph run fix/tests: complete after 3 round(s)"}
	// The first POST gets a 500: the activity fails (the workflow's policy retries) without naming the URL.
	_, err := f.env.ExecuteActivity(activities.NotifyName, in)
	if err == nil || !strings.Contains(err.Error(), "500") || strings.Contains(err.Error(), "SECRET-TOKEN") || strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("first POST error = %v, want the 500 without the URL", err)
	}
	if _, err := f.env.ExecuteActivity(activities.NotifyName, in); err != nil {
		t.Fatal(err)
	}
	if len(rcv.bodies) != 2 || rcv.keys[0] != "fix/tests/run-1/complete/3" || rcv.keys[1] != rcv.keys[0] {
		t.Fatalf("receiver got %d POSTs with keys %q, want 2 with the same Idempotency-Key", len(rcv.bodies), rcv.keys)
	}
	want := map[string]any{"text": in.Text, "event": "complete", "workflowId": "fix/tests", "runId": "run-1",
		"round": float64(3), "status": "complete", "url": "http://ui.example:8233/namespaces/default-test-namespace/workflows/fix%2Ftests/run-1/history"}
	for k, v := range want {
		if rcv.bodies[1][k] != v {
			t.Errorf("body %s = %v, want %v", k, rcv.bodies[1][k], v)
		}
	}
}

func TestNotifyHidesAnUnreachableURL(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{}, context.Background(), func(c *activities.Config) {
		c.NotifyURL = "http://127.0.0.1:1/hooks/SECRET-TOKEN"
	})
	_, err := f.env.ExecuteActivity(activities.NotifyName, activities.NotifyInput{Event: "blocked", WorkflowID: "w", RunID: "r"})
	if err == nil || strings.Contains(err.Error(), "SECRET-TOKEN") || strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("error = %v, want one that does not name the URL", err)
	}
}

func TestNotifyWithoutAURLReturnsAtOnce(t *testing.T) {
	f := newFixture(t, fakeopenai.Script{}, context.Background(), nil)
	if _, err := f.env.ExecuteActivity(activities.NotifyName, activities.NotifyInput{Event: "complete"}); err != nil {
		t.Fatal(err)
	}
}

// Whatever text the workflow hands over, the receiver reads it escaped for
// Slack's and Mattermost's markup and without control characters: a
// workflow id or a task's text never becomes a mention, a link or a
// terminal command in a client that prints the body.
func TestNotifyEscapesTheText(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	f := newFixture(t, fakeopenai.Script{}, context.Background(), func(c *activities.Config) { c.NotifyURL = srv.URL })
	in := activities.NotifyInput{Event: "blocked", WorkflowID: "w", RunID: "r",
		Text: "Ralph run w: " + activities.QuoteModelText("<!channel> <https://evil.example|Approve> & `x`\n\x1b]52;c;eA==\x07\u009b2J")}
	if _, err := f.env.ExecuteActivity(activities.NotifyName, in); err != nil {
		t.Fatal(err)
	}
	want := "Ralph run w: `&lt;!channel&gt; &lt;https://evil.example|Approve&gt; &amp; 'x' ]52;c;eA==2J`"
	if len(rcv.bodies) != 1 || rcv.bodies[0]["text"] != want {
		t.Fatalf("receiver read %v, want text %q", rcv.bodies, want)
	}
}
