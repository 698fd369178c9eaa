package activities

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/usage"
)

func TestHeartbeatFollowsTheSession(t *testing.T) {
	h := startHeartbeatWith(context.Background(), HeartbeatDetails{Round: 2}, time.Hour, func(HeartbeatDetails) bool { return true })
	defer h.stop()
	for _, e := range []agent.Event{
		{Kind: agent.EventModelRequest, Step: 1, ContextTokens: 900},
		{Kind: agent.EventModelResponse, Step: 1, ContextTokens: 1000, Usage: &usage.Usage{PromptTokens: 1000}},
		{Kind: agent.EventToolCall, Step: 1, Tool: "run_command"},
		{Kind: agent.EventModelRequest, Step: 2, ContextTokens: 6400},
		{Kind: agent.EventModelResponse, Step: 2}, // no usage reported: the estimate stays
		{Kind: agent.EventToolCall, Step: 2, Tool: "submit_report"},
		{Kind: agent.EventVerifyStart, Step: 2, Tool: agent.VerifyTool},
	} {
		h.Observe(e)
	}
	got, _ := h.snapshot()
	want := HeartbeatDetails{Round: 2, Step: 2, LastTool: "verify", ContextTokens: 6400,
		Usage: usage.Usage{ModelCalls: 2, ToolCalls: 2, PromptTokens: 1000}}
	if got != want {
		t.Errorf("details = %+v, want %+v", got, want)
	}
}

func TestHeartbeatShowsStreamProgress(t *testing.T) {
	h := startHeartbeatWith(context.Background(), HeartbeatDetails{Round: 1}, time.Hour, func(HeartbeatDetails) bool { return true })
	defer h.stop()
	h.Observe(agent.Event{Kind: agent.EventModelRequest, Step: 1, ContextTokens: 900})
	h.Observe(agent.Event{Kind: agent.EventModelProgress, Step: 1, StreamedTokens: 3, FirstTokenMs: 420})
	h.Observe(agent.Event{Kind: agent.EventModelProgress, Step: 1, StreamedTokens: 250, FirstTokenMs: 420})
	got, _ := h.snapshot()
	want := HeartbeatDetails{Round: 1, Step: 1, ContextTokens: 900, StreamedTokens: 250, FirstTokenMs: 420}
	if got != want {
		t.Errorf("details mid-stream = %+v, want %+v", got, want)
	}
	h.Observe(agent.Event{Kind: agent.EventModelRequest, Step: 2, ContextTokens: 1200})
	got, _ = h.snapshot()
	if want := (HeartbeatDetails{Round: 1, Step: 2, ContextTokens: 1200}); got != want {
		t.Errorf("details at the next request = %+v, want %+v (progress cleared)", got, want)
	}
}

// A killed worker loses only what its last heartbeat did not carry, so every
// model answer's usage is heartbeated soon after it arrives, long before the
// next periodic heartbeat (an hour away here).
func TestEveryModelAnswerIsHeartbeated(t *testing.T) {
	var mu sync.Mutex
	var recorded []HeartbeatDetails
	h := startHeartbeatWith(context.Background(), HeartbeatDetails{Round: 1, Usage: usage.Usage{ModelCalls: 3}}, time.Hour,
		func(d HeartbeatDetails) bool { mu.Lock(); recorded = append(recorded, d); mu.Unlock(); return true })
	defer h.stop()
	last := func() (HeartbeatDetails, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(recorded) == 0 {
			return HeartbeatDetails{}, 0
		}
		return recorded[len(recorded)-1], len(recorded)
	}
	h.Observe(agent.Event{Kind: agent.EventModelRequest, Step: 0})
	h.Observe(agent.Event{Kind: agent.EventToolCall, Step: 0, Tool: "run_command"})
	if _, n := last(); n != 0 {
		t.Fatalf("%d heartbeats before any model answer and an hour before the first tick, want none", n)
	}
	// A tool call (heartbeated at once), then the report (after
	// UsageHeartbeatDelay, as this round goes on).
	answers := []*openai.ChatCompletionMessage{
		{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "run_command"}}}},
		{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: agent.SubmitReportTool}}}},
	}
	for calls := 4; calls <= 5; calls++ {
		h.Observe(agent.Event{Kind: agent.EventModelResponse, Step: calls - 4, Message: answers[calls-4], Usage: &usage.Usage{PromptTokens: 100, CompletionTokens: 10}})
		err := wait.For(context.Background(), 10*time.Second, time.Millisecond, func(context.Context) error {
			if d, _ := last(); d.Usage.ModelCalls != calls {
				return fmt.Errorf("last heartbeat carries %d model calls, want %d (the earlier attempts' 3 and this one's)", d.Usage.ModelCalls, calls)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if d, n := last(); n != 2 || d.Usage.PromptTokens != 200 || d.Usage.CompletionTokens != 20 || d.Usage.ToolCalls != 1 {
		t.Errorf("after two answers: %d heartbeats, last %+v; want 2, the last with both answers' tokens and the tool call", n, d.Usage)
	}
}

func TestOnlyAReportAnswerMayWaitForTheRoundsEnd(t *testing.T) {
	call := func(names ...string) *openai.ChatCompletionMessage {
		m := &openai.ChatCompletionMessage{}
		for _, n := range names {
			m.ToolCalls = append(m.ToolCalls, openai.ToolCall{Function: openai.FunctionCall{Name: n}})
		}
		return m
	}
	for _, c := range []struct {
		m    *openai.ChatCompletionMessage
		want bool
	}{
		{nil, false},
		{&openai.ChatCompletionMessage{Content: "thinking aloud"}, false},
		{call("run_command"), false},
		{call("run_command", agent.SubmitReportTool), false},
		{call(agent.SubmitReportTool), true},
		{call(agent.SubmitReviewTool), true},
		{call(agent.SubmitPlanTool), true},
		{call(agent.SubmitPlanTool, "read_file"), false},
	} {
		if got := submitsReport(c.m); got != c.want {
			t.Errorf("submitsReport(%+v) = %v, want %v", c.m, got, c.want)
		}
	}
}

// The next model request waits until the server has the last answer's
// usage, so a killed attempt can lose at most the answer it got last.
func TestTheNextRequestWaitsForTheUsageHeartbeat(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var carried int // model calls the server has
	h := startHeartbeatWith(context.Background(), HeartbeatDetails{Round: 1}, time.Hour, func(d HeartbeatDetails) bool {
		<-release // the server is slow to answer
		mu.Lock()
		carried = d.Usage.ModelCalls
		mu.Unlock()
		return true
	})
	defer h.stop()
	h.Observe(agent.Event{Kind: agent.EventModelRequest, Step: 0}) // nothing to wait for
	h.Observe(agent.Event{Kind: agent.EventModelResponse, Step: 0,
		Message: &openai.ChatCompletionMessage{ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "run_command"}}}}})
	seen := make(chan int)
	go func() {
		h.Observe(agent.Event{Kind: agent.EventModelRequest, Step: 1})
		mu.Lock()
		defer mu.Unlock()
		seen <- carried
	}()
	// If the request did not wait it would report 0 before the release.
	time.Sleep(50 * time.Millisecond)
	close(release)
	if got := <-seen; got != 1 {
		t.Errorf("the second request went out when the server had %d model calls, want 1", got)
	}
}

// A heartbeat that did not reach the server does not count: the request
// waits for the next one that does.
func TestAFailedUsageHeartbeatIsRetried(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	h := startHeartbeatWith(context.Background(), HeartbeatDetails{Round: 1}, 10*time.Millisecond, func(d HeartbeatDetails) bool {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return calls >= 3 // the first two fail
	})
	defer h.stop()
	h.Observe(agent.Event{Kind: agent.EventModelResponse, Step: 0})
	h.Observe(agent.Event{Kind: agent.EventModelRequest, Step: 1})
	mu.Lock()
	defer mu.Unlock()
	if calls < 3 {
		t.Errorf("the request went out after %d heartbeat calls, want it to wait for the third (the first that succeeded)", calls)
	}
}

// Only the server's answers that end an attempt reach the SDK's
// RecordHeartbeat (which cancels the round); a transient failure to reach
// the server never does, so a network blip does not end the round.
func TestOnlyAnswersThatEndTheAttemptGoThroughTheSDK(t *testing.T) {
	for _, tc := range []struct {
		err  error
		ends bool
	}{
		{temporal.NewCanceledError(), true},
		{activity.ErrActivityPaused, true},
		{activity.ErrActivityReset, true},
		{serviceerror.NewNotFound("activity not found"), true},
		{serviceerror.NewUnavailable("connection refused"), false},
		{context.DeadlineExceeded, false},
		{serviceerror.NewDeadlineExceeded("timeout"), false},
		{errors.New("transport is closing"), false},
	} {
		if got := endsAttempt(tc.err); got != tc.ends {
			t.Errorf("endsAttempt(%v) = %v, want %v", tc.err, got, tc.ends)
		}
	}
}
