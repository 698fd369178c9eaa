package integration

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
)

// tracedUsage is the usage the scripted model reports for its request i,
// distinct per request so each chat span's tokens can be matched.
func tracedUsage(i int) *openai.Usage {
	return &openai.Usage{PromptTokens: 1000 + i, CompletionTokens: 10 + i}
}

func withUsage(req fakeopenai.Request, r fakeopenai.Response) fakeopenai.Response {
	r.Usage = tracedUsage(req.Index)
	return r
}

// waitForSpans polls the receiver until ok holds for its spans.
func waitForSpans(t *testing.T, rcv *testkit.OTLPReceiver, within time.Duration, what string, ok func([]testkit.Span) bool) []testkit.Span {
	t.Helper()
	var spans []testkit.Span
	err := wait.For(context.Background(), within, 100*time.Millisecond, func(context.Context) error {
		if spans = rcv.Spans(); !ok(spans) {
			return fmt.Errorf("after %s the collector has %d spans, still not %s:\n%s", within, len(spans), what, spanList(spans))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

func spanList(spans []testkit.Span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.Service + " " + s.Name + " " + s.SpanID + " <- " + s.ParentID + "\n")
	}
	return b.String()
}

func byName(spans []testkit.Span, name string) []testkit.Span {
	var out []testkit.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func hasSpan(name string) func([]testkit.Span) bool {
	return func(spans []testkit.Span) bool { return len(byName(spans, name)) > 0 }
}

// TestRealStackTraces: a starter run against a traced worker exports one
// trace rooted at the starter's span, through the workflow and its
// activities to every round's model and tool calls; one chat span per
// request the model saw, with the tokens it returned; no content, no key.
func TestRealStackTraces(t *testing.T) {
	t.Parallel()
	rcv := testkit.NewOTLPReceiver()
	t.Cleanup(rcv.Close)
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.Endpoint(), "OTEL_RESOURCE_ATTRIBUTES=deployment.environment=it"}
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return withUsage(tn.Request, tool("write_file", map[string]string{"path": "notes.txt", "content": "canary-content-7c1"}))
		case tn.Round() == 1:
			return withUsage(tn.Request, submit(continueArgs("wrote notes", "finish")))
		case tn.Step() == 0:
			return withUsage(tn.Request, tool("read_file", map[string]string{"path": "missing.txt"}))
		default:
			return withUsage(tn.Request, submit(completeArgs("done", "notes.txt exists")))
		}
	}), otel...)
	worker := e.startWorker()
	starterEnv := append([]string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}, otel...)
	out, code := runBinary(t, "starter", starterEnv, "run", "--workspace", "traced", "--objective", "trace every round")
	if code != 0 {
		t.Fatalf("starter run: exit %d\n%s", code, out)
	}
	// The starter flushed at exit; the worker flushes at shutdown.
	e.drain(worker)
	spans := waitForSpans(t, rcv, 30*time.Second, "the starter's root span and the workflow span", func(s []testkit.Span) bool {
		return hasSpan("starter run")(s) && hasSpan("RunWorkflow:Ralph")(s)
	})

	services := map[string]int{}
	for _, s := range spans {
		services[s.Service]++
	}
	if services["ralph-starter"] == 0 || services["ralph-worker"] == 0 {
		t.Fatalf("spans by service %v, want both ralph-starter and ralph-worker", services)
	}
	root := byName(spans, "starter run")
	if len(root) != 1 || root[0].ParentID != "" || root[0].Service != "ralph-starter" {
		t.Fatalf("starter run spans %+v, want one root span of ralph-starter", root)
	}
	ids := map[string]testkit.Span{}
	for _, s := range spans {
		ids[s.SpanID] = s
	}
	for _, s := range spans {
		if s.TraceID != root[0].TraceID {
			t.Errorf("span %s (%s) is in trace %s, not the starter's %s", s.Name, s.Service, s.TraceID, root[0].TraceID)
		}
		if _, ok := ids[s.ParentID]; s.ParentID != "" && !ok {
			t.Errorf("span %s has parent %s, which was never exported", s.Name, s.ParentID)
		}
	}
	parentName := func(s testkit.Span) string { return ids[s.ParentID].Name }
	if w := byName(spans, "RunWorkflow:Ralph"); len(w) != 1 || parentName(w[0]) != "StartWorkflow:Ralph" || parentName(ids[w[0].ParentID]) != "starter run" {
		t.Errorf("workflow spans %+v: want one, under StartWorkflow:Ralph under starter run", w)
	}
	rounds := byName(spans, "ralph.round")
	if len(rounds) != 2 {
		t.Fatalf("%d ralph.round spans, want 2:\n%s", len(rounds), spanList(spans))
	}
	for i, r := range rounds {
		if parentName(r) != "RunActivity:RunRound" || r.Int("ralph.round") != int64(i+1) || r.Str("ralph.workspace") != "traced" || r.Str("ralph.session_id") == "" {
			t.Errorf("round span %d: parent %s, attributes %v", i, parentName(r), r.Attrs)
		}
	}
	if rounds[0].Str("ralph.report.status") != "continue" || rounds[1].Str("ralph.report.status") != "complete" {
		t.Errorf("report statuses %q %q", rounds[0].Str("ralph.report.status"), rounds[1].Str("ralph.report.status"))
	}

	chats := byName(spans, "chat scripted-model")
	reqs := e.model.Requests()
	if len(chats) != len(reqs) || len(reqs) != 4 {
		t.Fatalf("%d chat spans, %d model requests, want 4 of each", len(chats), len(reqs))
	}
	for _, c := range chats {
		var idx int
		if _, err := fmtSscan(c.Str("gen_ai.response.id"), &idx); err != nil {
			t.Fatalf("chat span response id %q: %v", c.Str("gen_ai.response.id"), err)
		}
		want := tracedUsage(idx)
		if c.Int("gen_ai.usage.input_tokens") != int64(want.PromptTokens) || c.Int("gen_ai.usage.output_tokens") != int64(want.CompletionTokens) {
			t.Errorf("chat span of request %d: tokens %d/%d, the model returned %d/%d", idx,
				c.Int("gen_ai.usage.input_tokens"), c.Int("gen_ai.usage.output_tokens"), want.PromptTokens, want.CompletionTokens)
		}
		if c.Str("gen_ai.operation.name") != "chat" || c.Str("gen_ai.provider.name") != "openai" || c.Str("gen_ai.request.model") != "scripted-model" ||
			parentName(c) != "ralph.round" {
			t.Errorf("chat span attributes %v, parent %s", c.Attrs, parentName(c))
		}
	}
	failed := byName(spans, "execute_tool read_file")
	if len(failed) != 1 || !failed[0].Error || failed[0].Str("gen_ai.tool.call.id") == "" {
		t.Errorf("failed read_file spans %+v, want one with error status", failed)
	}
	for _, raw := range rcv.Raw() {
		if bytes.Contains(raw, []byte(testAPIKey)) {
			t.Error("an exported span carries the API key")
		}
		if bytes.Contains(raw, []byte("canary-content-7c1")) || bytes.Contains(raw, []byte("trace every round")) {
			t.Error("message content was exported without the opt-in")
		}
	}
	e.noKeyAnywhere("ralph-traced")
}

// TestRealStackTracesWorkerRestart: a worker stopped mid-round (its cached
// workflow torn down) and a fresh one that rebuilds the run from history
// export one workflow span and one StartActivity span per scheduled round,
// all in one trace.
func TestRealStackTracesWorkerRestart(t *testing.T) {
	t.Parallel()
	rcv := testkit.NewOTLPReceiver()
	t.Cleanup(rcv.Close)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1:
			return submit(continueArgs("round one", "round two"))
		case tn.Session == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo $$ >> attempts; sleep 300"})
		case tn.Session == 1:
			return fakeopenai.Text("the stopped session must never get here")
		default:
			return submit(completeArgs("finished on the second worker", "it ran"))
		}
	}), "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.Endpoint(), "RALPH_WORKER_STOP_TIMEOUT_SECONDS=1", "RALPH_HEARTBEAT_TIMEOUT_SECONDS=2")
	first := e.startWorker()
	run := e.start("traced-restart", `{"objective":"survive a restart","workspace":"restart"}`)
	waitForLines(t, filepath.Join(e.root, "restart", "attempts"), 1, 90*time.Second)
	e.drain(first)
	second := e.startWorker()
	res, err := e.result(run)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("run across a restart: %+v, %v", res, err)
	}
	e.drain(second)
	spans := waitForSpans(t, rcv, 30*time.Second, "the workflow span", hasSpan("RunWorkflow:Ralph"))

	wf := byName(spans, "RunWorkflow:Ralph")
	if len(wf) != 1 {
		t.Fatalf("%d workflow spans exported for one run across a restart, want 1:\n%s", len(wf), spanList(spans))
	}
	starts := byName(spans, "StartActivity:RunRound")
	if len(starts) != 2 {
		t.Fatalf("%d StartActivity:RunRound spans for 2 scheduled rounds:\n%s", len(starts), spanList(spans))
	}
	for _, s := range append(starts, byName(spans, "StartActivity:ResolveLimits")...) {
		if s.ParentID != wf[0].SpanID || s.TraceID != wf[0].TraceID {
			t.Errorf("%s is not a child of the one workflow span", s.Name)
		}
	}
	// The round that was running when the first worker stopped ran again: two
	// attempts of round 2 (one per worker), each its own activity span.
	if acts := byName(spans, "RunActivity:RunRound"); len(acts) < 2 {
		t.Errorf("%d RunActivity:RunRound spans, want at least 2", len(acts))
	}
}

// fmtSscan reads the request index out of a scripted response id.
func fmtSscan(id string, idx *int) (int, error) {
	return fmt.Sscanf(id, "chatcmpl-fake-%d", idx)
}
