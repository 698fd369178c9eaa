package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/usage"
)

// wires are the ways a session can talk to the model: every test of the
// wire runs on each.
var wires = []struct {
	name   string
	api    string
	stream bool
}{
	{"chat streamed", agent.WireChat, true},
	{"chat not streamed", agent.WireChat, false},
	{"responses streamed", agent.WireResponses, true},
	{"responses not streamed", agent.WireResponses, false},
}

func onEveryWire(t *testing.T, test func(t *testing.T, h func(fakeopenai.Script) *harness)) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			test(t, func(s fakeopenai.Script) *harness {
				h := newHarness(t, s)
				h.cfg.WireAPI, h.cfg.Stream = w.api, w.stream
				return h
			})
		})
	}
}

// checkInputPrefix asserts that on the Responses wire, too, every request
// extends the previous one's input byte for byte (prompt caching).
func checkInputPrefix(t *testing.T, h *harness) {
	t.Helper()
	var prev []json.RawMessage
	for _, r := range h.requests() {
		var body struct {
			Input []json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		for i := range prev {
			if i >= len(body.Input) || !bytes.Equal(prev[i], body.Input[i]) {
				t.Fatalf("request %d rewrote input item %d", r.Index, i)
			}
		}
		prev = body.Input
	}
}

func TestStreamedArgumentsSplitAcrossChunksAndUsageLast(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		content := strings.Repeat("streamed line ü\n", 40)
		write := call("write_file", map[string]string{"path": "out.txt", "content": content})
		write.Reasoning = "I should write the file."
		write.Usage = &openai.Usage{PromptTokens: 1234, CompletionTokens: 56}
		final := submit(validContinue)
		final.Usage = &openai.Usage{PromptTokens: 1400, CompletionTokens: 30}
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{write, final}})
		res, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(filepath.Join(h.req.Workspace, "out.txt")); err != nil || string(data) != content {
			t.Errorf("out.txt = %q, %v; want the arguments joined from their chunks", data, err)
		}
		want := usage.Usage{ModelCalls: 2, ToolCalls: 2, PromptTokens: 2634, CompletionTokens: 86}
		if res.Usage != want {
			t.Errorf("usage = %+v, want %+v (from the last chunk of each stream)", res.Usage, want)
		}
		reqs := h.requests()
		if h.cfg.WireAPI == agent.WireChat && h.cfg.Stream {
			var body struct {
				Stream        bool            `json:"stream"`
				StreamOptions json.RawMessage `json:"stream_options"`
			}
			json.Unmarshal(reqs[0].Raw, &body)
			if !body.Stream || string(body.StreamOptions) != `{"include_usage":true}` {
				t.Errorf("request: stream %v, stream_options %s; want true and include_usage", body.Stream, body.StreamOptions)
			}
		} else if h.cfg.WireAPI == agent.WireResponses {
			checkInputPrefix(t, h)
			if *reqs[1].Store {
				t.Error("store is not false")
			}
		}
		// The second request echoes the call with the id the provider gave.
		echoed := reqs[1].Chat.Messages[2]
		if len(echoed.ToolCalls) != 1 || echoed.ToolCalls[0].ID != "call_0_0" || echoed.ToolCalls[0].Function.Name != "write_file" {
			t.Errorf("echoed assistant turn = %+v", echoed)
		}
	})
}

func TestStreamProgressReachesTheEvents(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		progress := h.events.ofKind(agent.EventModelProgress)
		if !h.cfg.Stream {
			if len(progress) != 0 {
				t.Errorf("progress events without streaming: %+v", progress)
			}
			return
		}
		if len(progress) == 0 || progress[0].StreamedTokens <= 0 || progress[0].FirstTokenMs <= 0 || progress[0].Step != 1 {
			t.Errorf("progress events = %+v, want the first token's", progress)
		}
	})
}

func TestStalledStreamIsRetriedInTheSameSession(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		write := call("write_file", map[string]string{"path": "a.txt", "content": "a\n"})
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Stall(write, 2), write, submit(validContinue)}})
		if !h.cfg.Stream {
			h.cfg.CallTimeout = 300 * time.Millisecond // without a stream only the per-call timeout sees a stall
		}
		h.cfg.IdleTimeout = 300 * time.Millisecond
		res, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		if res.Usage.ModelCalls != 2 || res.Usage.ToolCalls != 2 {
			t.Errorf("usage = %+v", res.Usage)
		}
		reqs := h.requests()
		if len(reqs) != 3 || !reflect.DeepEqual(reqs[0].Chat.Messages, reqs[1].Chat.Messages) {
			t.Fatalf("%d requests; the retry must resend the stalled request unchanged", len(reqs))
		}
		errs := h.events.ofKind(agent.EventModelError)
		if len(errs) != 1 || !errs[0].Transient || errs[0].Step != 1 {
			t.Fatalf("model errors = %+v, want one transient", errs)
		}
		if h.cfg.Stream && !strings.Contains(errs[0].Error, "no byte for 300ms") {
			t.Errorf("error = %q, want the idle timeout named", errs[0].Error)
		}
		if _, left := h.srv.Left(0); !left {
			t.Error("the server never saw the stalled request's client leave")
		}
	})
}

func TestCutStreamIsRetried(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		write := call("write_file", map[string]string{"path": "a.txt", "content": strings.Repeat("x", 300)})
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Cut(write, 3), write, submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		if n := len(h.requests()); n != 3 {
			t.Errorf("%d requests, want 3 (the cut answer retried)", n)
		}
		if data, _ := os.ReadFile(filepath.Join(h.req.Workspace, "a.txt")); len(data) != 300 {
			t.Errorf("a.txt has %d bytes: a cut answer must never run", len(data))
		}
		if errs := h.events.ofKind(agent.EventModelError); len(errs) != 1 || !errs[0].Transient {
			t.Errorf("model errors = %+v, want one transient", errs)
		}
	})
}

// On a wire that is not streamed the error event is a 200 whose body is an
// error object.
func TestStreamErrorEventIsRetried(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{
			fakeopenai.StreamErrorEvent(submit(validContinue), 1, "upstream overloaded"), submit(validContinue)}})
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		errs := h.events.ofKind(agent.EventModelError)
		if len(errs) != 1 || !errs[0].Transient || !strings.Contains(errs[0].Error, "upstream overloaded") {
			t.Errorf("model errors = %+v, want one transient naming the event's message", errs)
		}
	})
}

func TestCancelMidStreamAbortsTheRequest(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Stall(submit(validContinue), 2)}})
		ctx, cancel := context.WithCancel(context.Background())
		cancelled := make(chan time.Time, 1)
		go func() {
			for h.srv.RequestCount() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // into the stall
			cancelled <- time.Now()
			cancel()
		}()
		_, err := h.runCtx(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		at := <-cancelled
		var left time.Time
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if l, ok := h.srv.Left(0); ok {
				left = l
				break
			}
		}
		if left.IsZero() || left.Sub(at) > time.Second {
			t.Fatalf("the server saw the client leave at %v, %v after the cancel; want within a second", left, left.Sub(at))
		}
	})
}

func TestFallbackModelOnEveryWire(t *testing.T) {
	onEveryWire(t, func(t *testing.T, newH func(fakeopenai.Script) *harness) {
		h := newH(fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Unavailable(""), fakeopenai.Unavailable(""), submit(validContinue)}})
		h.cfg.TransientRetries, h.cfg.FallbackModels = 1, []string{"fallback-model"}
		res, err := h.run()
		if err != nil {
			t.Fatal(err)
		}
		reqs := h.requests()
		if res.Model != "fallback-model" || len(reqs) != 3 || reqs[2].Chat.Model != "fallback-model" || reqs[0].Chat.Model != "fake-model" {
			t.Errorf("model %q after %d requests; want the fallback to answer the third", res.Model, len(reqs))
		}
	})
}
