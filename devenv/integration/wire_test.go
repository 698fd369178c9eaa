package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// The builtin agent's wire on the real stack: streamed chat completions
// (the default) and the Responses API, through the worker binary.

var wireAPIs = []string{"chat", "responses"}

// counted is r reporting the given usage.
func counted(r fakeopenai.Response, prompt, completion int) fakeopenai.Response {
	r.Usage = &openai.Usage{PromptTokens: prompt, CompletionTokens: completion}
	return r
}

// TestRealStackStreamStallAndCutAreRetriedInTheRound: the second model call
// of round 1 first stalls (no byte for RALPH_MODEL_IDLE_SECONDS), then is
// cut mid-answer, then arrives with its arguments split over chunks and the
// usage in the last one; the same session goes on and completes the run.
func TestRealStackStreamStallAndCutAreRetriedInTheRound(t *testing.T) {
	t.Parallel()
	for _, api := range wireAPIs {
		t.Run(api, func(t *testing.T) {
			content := strings.Repeat("written through a stream ü\n", 200)
			write := counted(tool("write_file", map[string]string{"path": "streamed.txt", "content": content}), 2000, 300)
			var mu sync.Mutex
			secondCalls := 0
			e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
				switch tn.Step() {
				case 0:
					return counted(tool("list_files", map[string]string{}), 1000, 10)
				case 1:
					mu.Lock()
					secondCalls++
					n := secondCalls
					mu.Unlock()
					switch n {
					case 1:
						return fakeopenai.Stall(write, 2)
					case 2:
						return fakeopenai.Cut(write, 4)
					}
					return write
				}
				return counted(submit(completeArgs("streamed", "streamed.txt written")), 2600, 40)
			}), "RALPH_WIRE_API="+api, "RALPH_MODEL_IDLE_SECONDS=1")
			e.startWorker()
			id := "stream-faults-" + api
			res, err := e.result(e.start(id, `{"objective":"write streamed.txt","workspace":"streamed"}`))
			if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
				t.Fatalf("result = %+v, %v", res, err)
			}
			if data, err := os.ReadFile(filepath.Join(e.root, "streamed", "streamed.txt")); err != nil || string(data) != content {
				t.Errorf("streamed.txt: %d bytes, %v; want the arguments joined from their chunks", len(data), err)
			}
			want := usage.Usage{ModelCalls: 3, ToolCalls: 3, PromptTokens: 5600, CompletionTokens: 350}
			if res.Usage != want {
				t.Errorf("usage = %+v, want %+v (each answer's from its last chunk, nothing from the failed attempts)", res.Usage, want)
			}
			files := e.transcripts()
			if len(files) != 1 {
				t.Fatalf("%d transcripts, want 1: the retries stay in the round's one session", len(files))
			}
			data, _ := os.ReadFile(files[0])
			if n := strings.Count(string(data), `"kind":"model_error"`); n != 2 || !strings.Contains(string(data), "the stream sent no byte for 1s") {
				t.Errorf("transcript has %d model errors, want the stall and the cut", n)
			}
			if _, left := e.model.Left(1); !left {
				t.Error("the scripted server never saw the stalled request's client leave")
			}
			e.noKeyAnywhere(id)
		})
	}
}

// TestRealStackCancelMidStreamAbortsTheRequest: a run cancelled while its
// model answer streams: the scripted server sees the connection go, before
// the run is closed as cancelled.
func TestRealStackCancelMidStreamAbortsTheRequest(t *testing.T) {
	t.Parallel()
	for _, api := range wireAPIs {
		t.Run(api, func(t *testing.T) {
			e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
				return fakeopenai.Stall(submit(completeArgs("never", "never")), 2)
			}), "RALPH_WIRE_API="+api)
			e.startWorker()
			id := "cancel-mid-stream-" + api
			run := e.start(id, `{"objective":"stream for ever","workspace":"cancel-stream"}`)
			err := wait.For(context.Background(), 60*time.Second, 20*time.Millisecond, func(context.Context) error {
				if e.model.RequestCount() == 0 {
					return errors.New("no request yet")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // into the stall
			cancelled := time.Now()
			if err := e.client.CancelWorkflow(context.Background(), id, ""); err != nil {
				t.Fatal(err)
			}
			_, err = e.result(run)
			closed := time.Now()
			var canceled *temporal.CanceledError
			if !errors.As(err, &canceled) {
				t.Fatalf("run ended with %v, want canceled", err)
			}
			left, ok := e.model.Left(0)
			if !ok || left.After(closed) {
				t.Fatalf("the streamed request was not aborted before the run closed (left %v, closed %v)", left, closed)
			}
			t.Logf("cancel to connection closed: %v (a cancel reaches the round with its next heartbeat, every second)", left.Sub(cancelled))
		})
	}
}

// TestRealStackToolCallsWrittenAsTextComplete: a model whose server's tool
// parser misses (calls in a code fence, in tags, bare, arguments as an
// object, text as content parts) still completes its run.
func TestRealStackToolCallsWrittenAsTextComplete(t *testing.T) {
	t.Parallel()
	argsObject := tool("write_file", map[string]string{"path": "c.txt", "content": "c\n"})
	argsObject.Dialect = fakeopenai.ArgumentsObject
	parts := fakeopenai.Text("Let me check the files before I report.")
	parts.Dialect = fakeopenai.ContentParts
	steps := []fakeopenai.Response{
		fakeopenai.TextCall("fence", fakeopenai.CallJSON("write_file", map[string]string{"path": "a.txt", "content": "a\n"})),
		fakeopenai.TextCall("tags", fakeopenai.CallJSON("write_file", map[string]string{"path": "b.txt", "content": "b\n"})),
		argsObject,
		parts,
		fakeopenai.TextCall("bare", fakeopenai.SubmitReport(completeArgs("three files", "a.txt, b.txt and c.txt written"))),
	}
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response { return steps[min(tn.Step(), len(steps)-1)] }))
	e.startWorker()
	res, err := e.result(e.start("text-tool-calls", `{"objective":"write three files","workspace":"text-calls"}`))
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 1 || res.Usage.ToolCalls != 4 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(e.root, "text-calls", name)); err != nil {
			t.Error(err)
		}
	}
}

// TestRealStackProviderErrorDialects: Groq's tool_use_failed is told to
// the model and the round goes on; Groq's 413 compacts and hands off; in
// round 2 a 200 carrying an error object and a 500 whose reset header says
// minutes are retried at once in the session; the run completes.
func TestRealStackProviderErrorDialects(t *testing.T) {
	t.Parallel()
	busy := fakeopenai.Status(http.StatusInternalServerError, "busy")
	busy.Fault.Header = map[string]string{"x-ratelimit-reset-requests": "8m38s"}
	var mu sync.Mutex
	faults := map[string]bool{}
	once := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		first := !faults[name]
		faults[name] = true
		return first
	}
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0 && once("groq"):
			return fakeopenai.ToolUseFailed(`<function=list_files>{"path": "."`)
		case tn.Round() == 1 && len(tn.Chat.Tools) > 1 && tn.Step() >= 2:
			return fakeopenai.ContextLengthExceeded(fakeopenai.ContextGroq)
		case tn.Round() == 1 && len(tn.Chat.Tools) > 1:
			return tool("list_files", map[string]string{})
		case tn.Round() == 1:
			return submit(continueArgs("handed off after the 413", "finish in round 2"))
		case once("error-in-200"):
			return fakeopenai.Raw(http.StatusOK, `{"error":{"message":"upstream timed out","code":504}}`)
		case once("busy"):
			return busy
		}
		return submit(completeArgs("done in round 2", "round 2 reported"))
	}))
	e.startWorker()
	res, err := e.result(e.start("error-dialects", `{"objective":"survive the providers","workspace":"error-dialects"}`))
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	var compacted bool
	for _, r := range e.model.Requests() {
		if r.Round() == 1 && len(r.Chat.Messages) == 4 && len(r.Chat.Tools) == 1 {
			compacted = true
		}
	}
	if !compacted {
		t.Error("round 1 never sent the compacted hand-off request")
	}
	if st := e.status("error-dialects"); st.Deferrals != 0 {
		t.Errorf("status = %+v: nothing here may defer", st)
	}
}

// TestRealStackPermanentServerErrorFailsTheRun: llama.cpp without --jinja
// refuses every request with tools with a 500; the run fails at once
// instead of deferring for hours.
func TestRealStackPermanentServerErrorFailsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Status(http.StatusInternalServerError, "tools param requires --jinja flag")
	}})
	e.startWorker()
	_, err := e.result(e.start("permanent-500", `{"objective":"never starts","workspace":"jinja"}`))
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != "RoundFailed" || !strings.Contains(err.Error(), "--jinja") {
		t.Fatalf("err = %v, want RoundFailed naming --jinja", err)
	}
	if n := e.model.RequestCount(); n != 1 {
		t.Errorf("%d requests, want 1 (no retry, no deferral)", n)
	}
}

// TestRealStackStrictProvidersAcceptTheConversation: a server as strict as
// Mistral (no user message after a tool message, tool messages named,
// nine-character ids), Gemini (thought signatures back) and DeepSeek
// (reasoning_content on every assistant turn) at once; the forced hand-off
// of the last model call lands right after a tool result.
func TestRealStackStrictProvidersAcceptTheConversation(t *testing.T) {
	t.Parallel()
	script := agentScript(func(tn turn) fakeopenai.Response {
		if tn.Round() == 1 && tn.Step() == 0 {
			r := fakeopenai.Response{ToolCalls: []fakeopenai.Call{{ID: "listCall1", Name: "list_files", Arguments: "{}"}},
				Reasoning: "Look at the workspace first.", Dialect: fakeopenai.GeminiSignatures}
			return r
		}
		args := continueArgs("handed off at the last call", "finish")
		id := "report001"
		if tn.Round() > 1 {
			args, id = completeArgs("done", "round 2 reported"), "report002"
		}
		return fakeopenai.Response{ToolCalls: []fakeopenai.Call{{ID: id, Name: "submit_report", Arguments: fakeopenai.SubmitReport(args).Arguments}},
			Reasoning: "Report now."}
	})
	script.Strict = fakeopenai.Strictness{Mistral: true, Gemini: true, DeepSeekThinking: true}
	e := newEnv(t, script, "RALPH_MAX_MODEL_CALLS=2")
	e.startWorker()
	res, err := e.result(e.start("strict-providers", `{"objective":"please the strict","workspace":"strict"}`))
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// TestRealStackExtraBodyAndCompletionTokensField: what the deployment
// configures reaches every request.
func TestRealStackExtraBodyAndCompletionTokensField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("list_files", map[string]string{})
		}
		return submit(completeArgs("configured", "requests carried the settings"))
	}), `RALPH_EXTRA_BODY={"enable_thinking": false}`, "RALPH_MAX_TOKENS_FIELD=max_completion_tokens", "RALPH_MAX_OUTPUT_TOKENS=2048",
		"RALPH_REASONING_EFFORT=low")
	e.startWorker()
	res, err := e.result(e.start("extra-body", `{"objective":"send the settings","workspace":"extra-body"}`))
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("result = %+v, %v", res, err)
	}
	for _, r := range e.model.Requests() {
		var body map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		if string(body["enable_thinking"]) != "false" || string(body["max_completion_tokens"]) != "2048" || body["max_tokens"] != nil ||
			string(body["reasoning_effort"]) != `"low"` {
			t.Errorf("request %d: enable_thinking %s, max_completion_tokens %s, max_tokens %s, reasoning_effort %s", r.Index,
				body["enable_thinking"], body["max_completion_tokens"], body["max_tokens"], body["reasoning_effort"])
		}
	}
}

// TestRealStackSilentTruncationIsWarnedAndHandsOff: a provider that counts a
// fraction of the prompt (Ollama at its default context) cannot hide that
// the context fills: the worker warns, naming OLLAMA_CONTEXT_LENGTH, and the
// round hands off on the context bound.
func TestRealStackSilentTruncationIsWarnedAndHandsOff(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a line that fills the context\n", 400)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return counted(tool("write_file", map[string]string{"path": "big.txt", "content": big}), 300, 10)
		case tn.Round() == 1 && tn.Step() == 1:
			return counted(tool("read_file", map[string]string{"path": "big.txt"}), 300, 10)
		case tn.Round() == 1 && len(tn.Chat.Tools) > 1:
			return counted(tool("list_files", map[string]string{"path": fmt.Sprintf("dir-%d", tn.Step())}), 300, 10)
		case tn.Round() == 1:
			return counted(submit(continueArgs("context full", "go on")), 300, 10)
		}
		return counted(submit(completeArgs("done", "round 2")), 300, 10)
	}), "RALPH_CONTEXT_TOKENS=8000")
	w := e.startWorker()
	res, err := e.result(e.start("truncation", `{"objective":"fill the context","workspace":"truncation"}`))
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	round1 := 0
	for _, r := range e.model.Requests() {
		if r.Round() == 1 {
			round1++
		}
	}
	if round1 > 4 {
		t.Errorf("round 1 made %d requests: the hand-off came late (the provider's count drove the bounds)", round1)
	}
	if log := w.out.String(); !strings.Contains(log, "OLLAMA_CONTEXT_LENGTH") {
		t.Errorf("the worker log does not warn about the truncation:\n%s", tail(log, 3000))
	}
}
