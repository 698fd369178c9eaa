package activities

import (
	"context"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/activity"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/usage"
)

// The next attempt of a round counts what the lost attempts spent from their
// last heartbeat, so every model answer's usage is heartbeated at once: a
// worker killed later loses nothing, one killed before the heartbeat reached
// the server loses that one answer. An answer that submits the report is the
// exception: the round usually ends within UsageHeartbeatDelay and carries
// the usage in its result, so short rounds pay no extra server write; if it
// does not (verification, a checkpoint), the heartbeat follows after the
// delay. The worker's heartbeat throttle (workerapp.HeartbeatThrottle) must
// not be longer, or the SDK would hold these heartbeats back.
const UsageHeartbeatDelay = 20 * time.Millisecond

// heartbeat records HeartbeatDetails every interval for the whole round,
// from its own goroutine, so that a long model call, a long command or a
// Retry-After wait never falls silent (silence past the heartbeat timeout
// makes Temporal retry the round; heartbeats also deliver cancellation),
// and UsageHeartbeatDelay after every model answer. It follows the
// session's events to report the step, the last tool, the size of the last
// model request (contextTokens) and the usage so far.
type heartbeat struct {
	record func(HeartbeatDetails)

	mu      sync.Mutex
	details HeartbeatDetails

	// A model answer changed the usage: heartbeat now, or after
	// UsageHeartbeatDelay (an answer submitting the report). Capacity 1.
	answeredNow, answeredSoon chan struct{}
	stopCh                    chan struct{}
	done                      chan struct{}
}

func startHeartbeat(ctx context.Context, details HeartbeatDetails, every time.Duration) *heartbeat {
	return startHeartbeatWith(ctx, details, every, func(d HeartbeatDetails) { activity.RecordHeartbeat(ctx, d) })
}

func startHeartbeatWith(ctx context.Context, details HeartbeatDetails, every time.Duration, record func(HeartbeatDetails)) *heartbeat {
	h := &heartbeat{record: record, details: details,
		answeredNow: make(chan struct{}, 1), answeredSoon: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	go h.loop(ctx, every)
	return h
}

func (h *heartbeat) loop(ctx context.Context, every time.Duration) {
	defer close(h.done)
	// The first heartbeat waits one interval: recorded at once it costs a
	// server round trip on the critical path of every short round
	// (docs/benchmarks.md), and a round silent for one interval is not lost.
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	usageDue := time.NewTimer(UsageHeartbeatDelay)
	usageDue.Stop()
	defer usageDue.Stop()
	pending := false // usageDue is armed
	for {
		select {
		case <-ticker.C:
		case <-h.answeredNow:
		case <-h.answeredSoon:
			if !pending {
				pending = true
				usageDue.Reset(UsageHeartbeatDelay)
			}
			continue
		case <-usageDue.C:
		case <-h.stopCh:
			return
		case <-ctx.Done():
			return
		}
		h.record(h.snapshot())
		// This heartbeat carries every answer so far: the next is one
		// interval away, or comes with the next answer.
		if pending {
			pending = false
			usageDue.Stop()
		}
		ticker.Reset(every)
	}
}

func (h *heartbeat) snapshot() HeartbeatDetails {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.details
}

// Observe tracks the session's progress.
func (h *heartbeat) Observe(e agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case agent.EventModelRequest:
		h.details.Step, h.details.ContextTokens = e.Step, e.ContextTokens
	case agent.EventModelResponse:
		// The provider's count of the same request beats the estimate.
		if e.ContextTokens > 0 {
			h.details.ContextTokens = e.ContextTokens
		}
		call := usage.Usage{ModelCalls: 1}
		if e.Usage != nil {
			call.PromptTokens, call.CompletionTokens = e.Usage.PromptTokens, e.Usage.CompletionTokens
		}
		h.details.Usage = h.details.Usage.Add(call)
		signal := h.answeredNow
		if submitsReport(e.Message) {
			signal = h.answeredSoon
		}
		select {
		case signal <- struct{}{}:
		default: // already signalled: that heartbeat will carry this answer too
		}
	case agent.EventToolCall:
		h.details.Step, h.details.LastTool = e.Step, e.Tool
		h.details.Usage.ToolCalls++
	case agent.EventVerifyStart:
		h.details.Step, h.details.LastTool = e.Step, e.Tool
	}
}

// stop ends the heartbeat and waits for its goroutine.
func (h *heartbeat) stop() {
	close(h.stopCh)
	<-h.done
}

// submitsReport: the answer calls only a tool that ends the session.
func submitsReport(m *openai.ChatCompletionMessage) bool {
	if m == nil || len(m.ToolCalls) == 0 {
		return false
	}
	for _, c := range m.ToolCalls {
		if c.Function.Name != agent.SubmitReportTool && c.Function.Name != agent.SubmitReviewTool {
			return false
		}
	}
	return true
}
