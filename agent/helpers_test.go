package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// testKey must never appear in errors, events or transcripts.
const testKey = "sk-test-7d1f0c2a9b8e4f3d"

const objective = "Write hello.txt containing hello and check it."

// validContinue is a report the agent accepts.
var validContinue = fakeopenai.ReportArgs{
	Status: "continue", Summary: "Wrote hello.txt.", Evidence: []string{"cat hello.txt printed hello"},
	NextSteps: []string{"Add a test for hello.txt."},
}

type harness struct {
	t      *testing.T
	srv    *fakeopenai.Server
	cfg    agent.Config
	req    agent.Request
	events *eventLog
}

func newHarness(t *testing.T, script fakeopenai.Script) *harness {
	t.Helper()
	srv := fakeopenai.NewServer(script)
	t.Cleanup(srv.Close)
	cfg := agent.DefaultConfig()
	cfg.BaseURL = srv.BaseURL()
	cfg.APIKey = testKey
	cfg.Model = "fake-model"
	cfg.CallTimeout = 20 * time.Second
	cfg.RetryBaseDelay = time.Millisecond
	cfg.RetryMaxDelay = 5 * time.Millisecond
	return &harness{
		t: t, srv: srv, cfg: cfg, events: &eventLog{},
		req: agent.Request{
			SessionID: "test-session", Objective: objective, Round: 1, MaxRounds: 3,
			Workspace: t.TempDir(), MaxHandoffChars: 16384,
		},
	}
}

func (h *harness) run() (agent.Result, error) {
	return h.runCtx(context.Background())
}

func (h *harness) runCtx(ctx context.Context) (agent.Result, error) {
	h.t.Helper()
	res, err := agent.RunSession(ctx, h.cfg, h.req, h.events)
	if err != nil && strings.Contains(err.Error(), testKey) {
		h.t.Errorf("error contains the API key: %v", err)
	}
	h.checkConversation()
	h.checkEventsRedacted()
	return res, err
}

// checkConversation asserts what every provider relies on: each request's
// messages extend the previous request's messages byte for byte, and every
// tool message has content.
func (h *harness) checkConversation() {
	h.t.Helper()
	var prev []json.RawMessage
	for _, r := range h.srv.Requests() {
		var body struct {
			Messages       []json.RawMessage `json:"messages"`
			ToolChoice     json.RawMessage   `json:"tool_choice"`
			ResponseFormat json.RawMessage   `json:"response_format"`
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			h.t.Fatalf("request %d: %v", r.Index, err)
		}
		if body.ToolChoice != nil || body.ResponseFormat != nil {
			h.t.Errorf("request %d sets tool_choice or response_format; providers without them must work", r.Index)
		}
		if isCompacted(r) {
			prev = nil // the one request that replaces the conversation
		}
		if len(body.Messages) < len(prev) {
			h.t.Fatalf("request %d has %d messages, fewer than the previous %d", r.Index, len(body.Messages), len(prev))
		}
		for i := range prev {
			if !bytes.Equal(prev[i], body.Messages[i]) {
				h.t.Fatalf("request %d rewrote message %d:\nwas %s\nnow %s", r.Index, i, prev[i], body.Messages[i])
			}
		}
		prev = body.Messages
		for i, m := range r.Chat.Messages {
			if m.Role == openai.ChatMessageRoleTool && strings.TrimSpace(m.Content) == "" {
				h.t.Errorf("request %d message %d: empty tool message", r.Index, i)
			}
		}
	}
}

// compactedPrefix starts the summary of a compacted request (system prompt,
// round prompt, a one-line assistant turn, the summary).
const compactedPrefix = "Your conversation of this round no longer fits the model's context"

func isCompacted(r fakeopenai.Request) bool {
	msgs := r.Chat.Messages
	return len(msgs) == 4 && strings.HasPrefix(msgs[3].Content, compactedPrefix)
}

func (h *harness) checkEventsRedacted() {
	h.t.Helper()
	for _, e := range h.events.all() {
		data, _ := json.Marshal(e)
		if bytes.Contains(data, []byte(testKey)) {
			h.t.Errorf("event %s contains the API key", e.Kind)
		}
	}
}

// requests returns the recorded requests.
func (h *harness) requests() []fakeopenai.Request { return h.srv.Requests() }

type eventLog struct {
	mu     sync.Mutex
	events []agent.Event
}

func (l *eventLog) Observe(e agent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []agent.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]agent.Event(nil), l.events...)
}

func (l *eventLog) ofKind(kind agent.EventKind) []agent.Event {
	var out []agent.Event
	for _, e := range l.all() {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func offeredTools(r fakeopenai.Request) []string {
	var names []string
	for _, t := range r.Chat.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

func lastMessage(r fakeopenai.Request) openai.ChatCompletionMessage {
	return r.Chat.Messages[len(r.Chat.Messages)-1]
}

// toolMessages returns the tool messages of a request, in order.
func toolMessages(r fakeopenai.Request) []openai.ChatCompletionMessage {
	var out []openai.ChatCompletionMessage
	for _, m := range r.Chat.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, m)
		}
	}
	return out
}

func submit(r fakeopenai.ReportArgs) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReport(r))
}

func call(name string, args any) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.CallJSON(name, args))
}

func wantChildFailure(t *testing.T, err error, fragment string) {
	t.Helper()
	if !agent.IsChildFailure(err) {
		t.Fatalf("error = %v (%T), want a child failure", err, err)
	}
	if !strings.Contains(err.Error(), fragment) {
		t.Fatalf("error = %q, want it to mention %q", err, fragment)
	}
}

func mustReport(t *testing.T, r fakeopenai.ReportArgs) report.Report {
	t.Helper()
	return report.Report{Status: r.Status, Summary: r.Summary, Evidence: orEmpty(r.Evidence), NextSteps: orEmpty(r.NextSteps), Blocker: r.Blocker}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
