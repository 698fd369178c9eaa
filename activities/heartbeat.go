package activities

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/usage"
)

// heartbeat records HeartbeatDetails every interval for the whole round,
// from its own goroutine, so that a long model call, a long command or a
// Retry-After wait never falls silent (silence past the heartbeat timeout
// makes Temporal retry the round; heartbeats also deliver cancellation).
// It follows the session's events to report the step, the last tool and
// the size of the last model request (contextTokens).
type heartbeat struct {
	mu      sync.Mutex
	details HeartbeatDetails

	stopCh chan struct{}
	done   chan struct{}
}

func startHeartbeat(ctx context.Context, details HeartbeatDetails, every time.Duration) *heartbeat {
	h := &heartbeat{details: details, stopCh: make(chan struct{}), done: make(chan struct{})}
	go h.loop(ctx, every)
	return h
}

func (h *heartbeat) loop(ctx context.Context, every time.Duration) {
	defer close(h.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	// The first heartbeat waits one interval: recorded at once it costs a
	// server round trip on the critical path of every short round
	// (docs/benchmarks.md), and a round silent for one interval is not lost.
	for {
		select {
		case <-ticker.C:
		case <-h.stopCh:
			return
		case <-ctx.Done():
			return
		}
		activity.RecordHeartbeat(ctx, h.snapshot())
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
