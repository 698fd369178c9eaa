package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/usage"
)

// The next attempt of a round counts what the lost attempts spent from their
// last heartbeat, so a model answer's usage is heartbeated at once, and the
// session's next model request waits until the server has that heartbeat: a
// killed attempt loses at most the usage of the one answer it received last.
// An answer that submits the report waits UsageHeartbeatDelay first: the
// round usually ends sooner and carries the usage in its result, so short
// rounds pay no extra server write.
const UsageHeartbeatDelay = 20 * time.Millisecond

// heartbeatRPCTimeout bounds one direct heartbeat call.
const heartbeatRPCTimeout = 10 * time.Second

// heartbeat records HeartbeatDetails every interval for the whole round,
// from its own goroutine, so that a long model call, a long command or a
// Retry-After wait never falls silent (silence past the heartbeat timeout
// makes Temporal retry the round; heartbeats also deliver cancellation),
// and after every model answer. It follows the session's events to report
// the step, the last tool, the size of the last model request
// (contextTokens), the progress of a streamed answer (streamedTokens,
// firstTokenMs) and the usage so far.
type heartbeat struct {
	// record sends details and reports whether the server has them.
	record func(HeartbeatDetails) bool

	mu      sync.Mutex
	cond    *sync.Cond // signalled when sent changes or the loop ends
	details HeartbeatDetails
	answers int  // model answers observed
	sent    int  // answers the server's copy of the details carries
	ended   bool // the loop has returned

	// A model answer changed the usage: heartbeat now, or after
	// UsageHeartbeatDelay (an answer submitting the report). Capacity 1.
	answeredNow, answeredSoon chan struct{}
	stopCh                    chan struct{}
	done                      chan struct{}
}

func startHeartbeat(ctx context.Context, details HeartbeatDetails, every time.Duration, recorder HeartbeatRecorder) *heartbeat {
	if recorder == nil {
		recorder = HeartbeatThroughSDK
	}
	return startHeartbeatWith(ctx, details, every, recorder(ctx))
}

// HeartbeatRecorder returns the function that sends one attempt's
// heartbeats and reports whether the server has them.
type HeartbeatRecorder func(ctx context.Context) func(HeartbeatDetails) bool

// HeartbeatThroughSDK records heartbeats with the SDK's RecordHeartbeat,
// which may batch them and returns nothing.
func HeartbeatThroughSDK(ctx context.Context) func(HeartbeatDetails) bool {
	return func(d HeartbeatDetails) bool {
		activity.RecordHeartbeat(ctx, d)
		return true // all this recorder can know
	}
}

// HeartbeatThroughClient sends heartbeats through the worker's client, so
// that a returned call means the server has them. Only the server's answers
// that end the attempt (cancel requested, paused, reset, the attempt gone)
// are handed to the SDK's RecordHeartbeat, which acts on them by cancelling
// the round's context; a transient error (a network blip, a failover) is
// not, since the SDK would cancel the round after about a second of failing
// calls: the heartbeat is sent again at the next tick, and only silence
// past the heartbeat timeout makes Temporal retry the round.
func HeartbeatThroughClient(ctx context.Context) func(HeartbeatDetails) bool {
	c, token := activity.GetClient(ctx), activity.GetInfo(ctx).TaskToken
	if c == nil {
		return HeartbeatThroughSDK(ctx)
	}
	return func(d HeartbeatDetails) bool {
		rctx, cancel := context.WithTimeout(ctx, heartbeatRPCTimeout)
		err := c.RecordActivityHeartbeat(rctx, token, d)
		cancel()
		if err == nil {
			return true
		}
		if endsAttempt(err) {
			activity.RecordHeartbeat(ctx, d)
		}
		return false
	}
}

// endsAttempt reports whether a heartbeat error is the server's answer that
// the attempt must stop, rather than a failure to reach the server.
func endsAttempt(err error) bool {
	var notFound *serviceerror.NotFound
	return temporal.IsCanceledError(err) || errors.Is(err, activity.ErrActivityPaused) ||
		errors.Is(err, activity.ErrActivityReset) || errors.As(err, &notFound)
}

func startHeartbeatWith(ctx context.Context, details HeartbeatDetails, every time.Duration, record func(HeartbeatDetails) bool) *heartbeat {
	h := &heartbeat{record: record, details: details,
		answeredNow: make(chan struct{}, 1), answeredSoon: make(chan struct{}, 1), stopCh: make(chan struct{}), done: make(chan struct{})}
	h.cond = sync.NewCond(&h.mu)
	go h.loop(ctx, every)
	return h
}

func (h *heartbeat) loop(ctx context.Context, every time.Duration) {
	defer close(h.done)
	defer func() {
		h.mu.Lock()
		h.ended = true
		h.cond.Broadcast()
		h.mu.Unlock()
	}()
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
		d, answers := h.snapshot()
		if h.record(d) {
			h.mu.Lock()
			h.sent = max(h.sent, answers)
			h.cond.Broadcast()
			h.mu.Unlock()
		}
		// This heartbeat carries every answer so far: the next is one
		// interval away, or comes with the next answer. (One that did not
		// reach the server is tried again at the next tick.)
		if pending {
			pending = false
			usageDue.Stop()
		}
		ticker.Reset(every)
	}
}

func (h *heartbeat) snapshot() (HeartbeatDetails, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.details, h.answers
}

// Observe tracks the session's progress. Before a model request it waits
// until the server has the usage of every earlier answer.
func (h *heartbeat) Observe(e agent.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Kind {
	case agent.EventModelRequest:
		h.details.Step, h.details.ContextTokens = e.Step, e.ContextTokens
		h.details.StreamedTokens, h.details.FirstTokenMs = 0, 0
		if h.sent < h.answers && !h.ended {
			signal(h.answeredNow) // an answer waiting for its delay is due now
			for h.sent < h.answers && !h.ended {
				h.cond.Wait()
			}
		}
	case agent.EventModelResponse:
		// The provider's count of the same request beats the estimate.
		if e.ContextTokens > 0 {
			h.details.ContextTokens = e.ContextTokens
		}
		call := usage.Usage{ModelCalls: 1}
		if e.Usage != nil {
			call.PromptTokens, call.CompletionTokens, call.Estimated = e.Usage.PromptTokens, e.Usage.CompletionTokens, e.Usage.Estimated
		}
		h.details.Usage = h.details.Usage.Add(call)
		h.answers++
		if submitsReport(e.Message) {
			signal(h.answeredSoon)
		} else {
			signal(h.answeredNow)
		}
	case agent.EventModelProgress:
		h.details.StreamedTokens, h.details.FirstTokenMs = e.StreamedTokens, e.FirstTokenMs
	case agent.EventToolCall:
		h.details.Step, h.details.LastTool = e.Step, e.Tool
		h.details.Usage.ToolCalls++
	case agent.EventVerifyStart:
		h.details.Step, h.details.LastTool = e.Step, e.Tool
	}
}

// signal wakes the loop; one pending signal covers every answer so far.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// submitsReport: the answer calls only a tool that ends the session.
func submitsReport(m *openai.ChatCompletionMessage) bool {
	if m == nil || len(m.ToolCalls) == 0 {
		return false
	}
	for _, c := range m.ToolCalls {
		if !agent.IsFinishingTool(c.Function.Name) {
			return false
		}
	}
	return true
}

// stop ends the heartbeat and waits for its goroutine.
func (h *heartbeat) stop() {
	close(h.stopCh)
	<-h.done
}
