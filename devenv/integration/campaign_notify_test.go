package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/wait"
)

// A campaign's merged event goes on being retried while the campaign runs
// on (docs/operators.md): b waits for a, so the campaign starts b's loop
// right after a's merged notification. The receiver refuses each merged
// event's first two POSTs; both still arrive, and the campaign's history
// holds no request to cancel a notify child. (Before 2026-12-06 the
// campaign asked to cancel each notify child right after its start; the
// server carried that out for a's, sent while the campaign still ran, so
// a's event got one attempt.)
func TestRealStackCampaignMergedEventRetried(t *testing.T) {
	t.Parallel()
	// The workflow type, its input and the event as a client sees them
	// (docs/reference.md), whichever package defines the campaign.
	const campaignType, merged = "Campaign", "merged"
	hook := &hookReceiver{refuse: map[string]int{merged: 2}}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	bare, _ := bareRepo(t)
	e := newEnv(t, agentScript(campaignModel), "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare,
		"RALPH_NOTIFY_URL="+srv.URL, "RALPH_NOTIFY_EVENTS=merged")
	e.startWorker()
	id := "camp-notify"
	in := map[string]any{"verifyCommand": "test -f a.txt", "tasks": []map[string]any{
		{"id": "a", "objective": "TASK a: write a.txt"},
		{"id": "b", "objective": "TASK b: write b.txt after a", "dependsOn": []string{"a"}},
	}}
	run, err := e.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id, TaskQueue: e.queue, WorkflowExecutionTimeout: 5 * time.Minute,
	}, campaignType, in)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := run.Get(ctx, &res); err != nil || res["status"] != "complete" {
		t.Fatalf("campaign = %v, %v", res["status"], err)
	}
	want := []string{"merged@1", "merged@1"}
	err = wait.For(context.Background(), 2*time.Minute, 200*time.Millisecond, func(context.Context) error {
		if got := hook.events(); fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("receiver accepted %v, want %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hook.mu.Lock()
	refused := hook.refusedOf[merged]
	hook.mu.Unlock()
	if refused != 4 {
		t.Fatalf("receiver refused %d merged POSTs, want 2 for each task", refused)
	}
	notifyChildrenNotCancelled(t, e, id, 2)
}
