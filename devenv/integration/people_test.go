package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// hookReceiver is a webhook receiver that answers 500 for its first
// seconds (counted from the first POST) and keeps what it accepted.
type hookReceiver struct {
	mu       sync.Mutex
	failFor  time.Duration
	first    time.Time
	refused  int
	accepted []map[string]any
	keys     []string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
	if time.Since(h.first) < h.failFor {
		h.refused++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	h.accepted = append(h.accepted, body)
	h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
}

// events are the accepted events as "event@round", in arrival order.
func (h *hookReceiver) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, b := range h.accepted {
		out = append(out, fmt.Sprintf("%v@%v", b["event"], b["round"]))
	}
	return out
}

// People in the loop (docs/operators.md) on the real stack: a run with approve=complete
// holds its first complete; an operator's guidance and a rejection reach
// exactly the next round's prompt at the model; the second complete is
// approved. A real HTTP receiver that answers 500 for its first seconds
// gets each event once and in order, and the webhook URL is nowhere in the
// worker's log or the run's history.
func TestRealStackApprovalGuidanceAndNotifications(t *testing.T) {
	t.Parallel()
	hook := &hookReceiver{failFor: 3 * time.Second}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	const token = "SECRET-HOOK-TOKEN-41c9"
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		return submit(completeArgs(fmt.Sprintf("round %d finished", tn.Round()), "the objective holds"))
	}), "RALPH_NOTIFY_URL="+srv.URL+"/hooks/"+token, "RALPH_UI_URL=http://ui.example:8233")
	worker := e.startWorker()
	id := "people-approval"
	run := e.start(id, `{"objective":"write the notes","approve":"complete"}`)

	awaitApproval(t, e, id, 1)
	awaitEvents(t, hook, "awaiting-approval@1")
	update(t, e, id, workflows.UpdateGuide, workflows.GuideRequest{Text: "Use tabs."})
	update(t, e, id, workflows.UpdateReject, workflows.ReasonRequest{Reason: "The README still says v1."})
	awaitApproval(t, e, id, 2)
	awaitEvents(t, hook, "awaiting-approval@1", "awaiting-approval@2")
	update(t, e, id, workflows.UpdateApprove, workflows.ApproveRequest{})
	res, err := e.result(run)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	awaitEvents(t, hook, "awaiting-approval@1", "awaiting-approval@2", "complete@2")

	// Exactly one session's prompt carried the guidance: round 2's.
	var guided []int
	for _, req := range e.model.Requests() {
		if req.Step() == 0 && strings.Contains(req.Prompt(), "Guidance from the operator") {
			guided = append(guided, req.Round())
			if !strings.Contains(req.Prompt(), "Guidance from the operator:\nUse tabs.\n\nThe README still says v1.") {
				t.Errorf("round %d prompt:\n%s", req.Round(), req.Prompt())
			}
		}
	}
	if fmt.Sprint(guided) != "[2]" {
		t.Fatalf("sessions whose prompt carried guidance: rounds %v, want [2]", guided)
	}
	if st := e.status(id); st.Guidance == nil || st.Guidance.DeliveredRound != 2 || st.Guidance.Pending != "" {
		t.Fatalf("status guidance = %+v", st.Guidance)
	}

	hook.mu.Lock()
	keys, refused, last := hook.keys, hook.refused, hook.accepted[len(hook.accepted)-1]
	hook.mu.Unlock()
	if refused == 0 || len(keys) != 3 || keys[0] == keys[1] || keys[1] == keys[2] {
		t.Fatalf("receiver refused %d POSTs and accepted keys %q", refused, keys)
	}
	if last["workflowId"] != id || last["status"] != "complete" || !strings.HasPrefix(fmt.Sprint(last["url"]), "http://ui.example:8233/namespaces/") ||
		!strings.Contains(fmt.Sprint(last["text"]), id) {
		t.Fatalf("complete event body = %v", last)
	}
	noSecretInHistory(t, e, id, token)
	if strings.Contains(worker.out.String(), token) {
		t.Fatal("the worker's log holds the webhook URL")
	}
}

// awaitApproval waits until run id awaits approval after round.
func awaitApproval(t *testing.T, e *env, id string, round int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := wait.Until(ctx, 200*time.Millisecond, func(context.Context) error {
		if st := e.status(id); st.Phase != workflows.PhaseAwaitingApproval || st.Round != round {
			return fmt.Errorf("phase %s at round %d, want %s at round %d", st.Phase, st.Round, workflows.PhaseAwaitingApproval, round)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// awaitEvents waits until the receiver accepted exactly want, in order.
func awaitEvents(t *testing.T, h *hookReceiver, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := wait.Until(ctx, 200*time.Millisecond, func(context.Context) error {
		if got := h.events(); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("receiver accepted %v, want %v", got, want)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func update(t *testing.T, e *env, id, name string, arg any) {
	t.Helper()
	h, err := e.client.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(context.Background(), nil)
	}
	if err != nil {
		t.Fatalf("%s update: %v", name, err)
	}
}

func noSecretInHistory(t *testing.T, e *env, id, secret string) {
	t.Helper()
	it := e.client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(ev.String(), secret) {
			t.Fatalf("history event %d holds the webhook URL", ev.EventId)
		}
	}
}
