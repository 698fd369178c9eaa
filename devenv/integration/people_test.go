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
// seconds (counted from the first POST) and to the first refuse[event]
// POSTs of each event of that name (one Idempotency-Key), and keeps what
// it accepted, and when.
type hookReceiver struct {
	mu         sync.Mutex
	failFor    time.Duration
	refuse     map[string]int
	first      time.Time
	refused    int
	refusedOf  map[string]int // by event name
	refusedKey map[string]int // by Idempotency-Key
	accepted   []map[string]any
	acceptedAt []time.Time
	keys       []string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	event, key := fmt.Sprint(body["event"]), r.Header.Get("Idempotency-Key")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first.IsZero() {
		h.first = time.Now()
		h.refusedOf, h.refusedKey = map[string]int{}, map[string]int{}
	}
	if time.Since(h.first) < h.failFor || h.refusedKey[key] < h.refuse[event] {
		h.refused++
		h.refusedOf[event]++
		h.refusedKey[key]++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	h.accepted = append(h.accepted, body)
	h.acceptedAt = append(h.acceptedAt, time.Now())
	h.keys = append(h.keys, key)
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
// approved. A real HTTP receiver that answers 500 for its first seconds,
// and to the end event's first two POSTs, gets each event once and in
// order (the end event through its RalphNotify child's retries, after the
// run closed), and the webhook URL is nowhere in the worker's log or the
// run's history.
func TestRealStackApprovalGuidanceAndNotifications(t *testing.T) {
	t.Parallel()
	hook := &hookReceiver{failFor: 3 * time.Second, refuse: map[string]int{report.OutcomeComplete: 2}}
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
	refusedEnd, deliveredAt := hook.refusedOf[report.OutcomeComplete], hook.acceptedAt[len(hook.acceptedAt)-1]
	hook.mu.Unlock()
	if refused == 0 || len(keys) != 3 || keys[0] == keys[1] || keys[1] == keys[2] {
		t.Fatalf("receiver refused %d POSTs and accepted keys %q", refused, keys)
	}
	// The end event's third POST, after 1 s and 2 s of backoff, came after
	// the run had closed: its RalphNotify child was not cancelled with it.
	desc, err := e.client.DescribeWorkflow(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	closed := desc.RawResponse.GetWorkflowExecutionInfo().GetCloseTime().AsTime()
	if refusedEnd != 2 || !deliveredAt.After(closed.Add(2*time.Second)) {
		t.Fatalf("end event refused %d times, delivered at %v; the run closed at %v", refusedEnd, deliveredAt, closed)
	}
	notifyChildrenNotCancelled(t, e, id, 1)
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

// notifyChildrenNotCancelled: run id's history starts want RalphNotify
// children and holds no request to cancel one.
func notifyChildrenNotCancelled(t *testing.T, e *env, id string, want int) {
	t.Helper()
	children := 0
	it := e.client.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowType().GetName() == workflows.NotifyWorkflowName {
			children++
		}
		if ev.GetRequestCancelExternalWorkflowExecutionInitiatedEventAttributes() != nil {
			t.Fatalf("history event %d asks to cancel %s", ev.EventId,
				ev.GetRequestCancelExternalWorkflowExecutionInitiatedEventAttributes().GetWorkflowExecution().GetWorkflowId())
		}
	}
	if children != want {
		t.Fatalf("history starts %d notify children, want %d", children, want)
	}
}
