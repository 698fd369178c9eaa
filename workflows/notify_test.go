package workflows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/historyfile"
	"github.com/ralph-temporal/ralph/report"
)

// flakyReceiver stands in for the Notify activity: it refuses each event's
// first refusals attempts, then delivers it.
type flakyReceiver struct {
	mu        sync.Mutex
	refusals  int
	attempts  map[string]int
	delivered []string
}

func (r *flakyReceiver) notify(_ context.Context, in activities.NotifyInput) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := fmt.Sprintf("%s@%d", in.Event, in.Round)
	r.attempts[key]++
	if r.attempts[key] <= r.refusals {
		return errors.New("the receiver answered 500")
	}
	r.delivered = append(r.delivered, key)
	return nil
}

// register puts the real RalphNotify child and the flaky activity in env.
func (r *flakyReceiver) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterWorkflowWithOptions(RalphNotify, workflow.RegisterOptions{Name: NotifyWorkflowName})
	env.RegisterActivityWithOptions(r.notify, activity.RegisterOptions{Name: activities.NotifyName})
}

// The end event's RalphNotify child is not cancelled when its parent
// returns, nor when an operator cancelled the parent: a receiver that
// refuses the first two POSTs still gets the event, after the run closed.
// (The SDK asks to cancel a started child whose context is cancelled; the
// test environment then cuts the delivery to its first attempt.)
func TestEndEventRetriesAfterTheRunClosed(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		cancel      bool
	}{
		{name: "complete", event: "complete@1"},
		{name: "cancelled by an operator", event: "cancelled@1", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{reports: map[int]report.Report{1: completeReport(1)}}
			limits := testLimits()
			limits.NotifyEvents = []string{report.OutcomeComplete, OutcomeCancelled}
			env := newEnv(t, limits, s)
			rcv := &flakyReceiver{refusals: 2, attempts: map[string]int{}}
			rcv.register(env)
			slowRounds(env, s, 10*time.Second)
			var closedAt time.Time
			env.SetOnChildWorkflowStartedListener(func(*workflow.Info, workflow.Context, converter.EncodedValues) {
				closedAt = env.Now() // the run closes in the task that saw the child start
			})
			if tc.cancel {
				env.RegisterDelayedCallback(env.CancelWorkflow, 5*time.Second)
			}
			env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it"}`), (*Continuation)(nil))
			if err := env.GetWorkflowError(); tc.cancel != temporal.IsCanceledError(err) || (!tc.cancel && err != nil) {
				t.Fatalf("run error = %v", err)
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if fmt.Sprint(rcv.delivered) != "["+tc.event+"]" || rcv.attempts[tc.event] != 3 {
				t.Fatalf("delivered %v after %v attempts, want %s on its third attempt", rcv.delivered, rcv.attempts, tc.event)
			}
			// The retries' backoff (1 s, then 2 s) ran after the run closed.
			if closedAt.IsZero() || env.Now().Sub(closedAt) < 3*time.Second {
				t.Fatalf("delivered at %v, the run closed at %v", env.Now(), closedAt)
			}
		})
	}
}

// The recorded corpus, event by event: every run that recorded the
// notify-child-not-cancelled marker started its notify children and never
// asked to cancel one, while the runs recorded before it (2026-12-05) asked
// right after each start, which shows the check can fail. The files are
// globbed here, not through the replay test's helpers, so the test stands
// alone in this package.
func TestRecordedNotifyChildrenAreNotCancelled(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*/*.json*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded history found: %v", err)
	}
	var fixed, before int
	for _, file := range files {
		marked, children, cancels := notifyChildren(t, file)
		switch {
		case marked && cancels > 0:
			t.Errorf("%s: %d cancel request(s) for its %d notify child(ren)", file, cancels, children)
		case marked && children > 0:
			fixed++
		case !marked && children > 0 && cancels == children:
			before++
		}
	}
	if fixed < 4 || before == 0 {
		t.Fatalf("%d histories with uncancelled notify children, %d with cancelled ones: the corpus lost its recordings", fixed, before)
	}
}

// notifyChildren reads a recorded history: whether it holds the
// notify-child-not-cancelled marker, how many notify children it starts
// and how many cancel requests it sends.
func notifyChildren(t *testing.T, file string) (marked bool, children, cancels int) {
	t.Helper()
	data, err := historyfile.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	dc := converter.GetDefaultDataConverter()
	for _, ev := range hist.GetEvents() {
		if m := ev.GetMarkerRecordedEventAttributes(); m.GetMarkerName() == "Version" {
			var id string
			marked = marked || dc.FromPayloads(m.GetDetails()["change-id"], &id) == nil && id == versionNotifyNotCancelled
		}
		if ev.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowType().GetName() == NotifyWorkflowName {
			children++
		}
		if ev.GetRequestCancelExternalWorkflowExecutionInitiatedEventAttributes() != nil {
			cancels++
		}
	}
	return marked, children, cancels
}
