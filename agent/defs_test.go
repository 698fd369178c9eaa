package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// sentTools is the "tools" array of a request exactly as it reached the
// scripted server.
func sentTools(t *testing.T, r fakeopenai.Request) json.RawMessage {
	t.Helper()
	var body struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(r.Raw, &body); err != nil {
		t.Fatal(err)
	}
	return body.Tools
}

// transcriptDefinitions is the toolDefinitions value of the transcript's
// model_request lines (exactly one carries it).
func transcriptDefinitions(t *testing.T, transcript string) json.RawMessage {
	t.Helper()
	var defs []json.RawMessage
	for line := range strings.SplitSeq(strings.TrimSpace(transcript), "\n") {
		var e struct {
			Kind            string          `json:"kind"`
			ToolDefinitions json.RawMessage `json:"toolDefinitions"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("transcript line %q: %v", line, err)
		}
		if e.ToolDefinitions != nil {
			if e.Kind != string(agent.EventModelRequest) {
				t.Errorf("toolDefinitions on a %s line", e.Kind)
			}
			defs = append(defs, e.ToolDefinitions)
		}
	}
	if len(defs) != 1 {
		t.Fatalf("%d transcript lines carry toolDefinitions, want 1", len(defs))
	}
	return defs[0]
}

// The transcript records the tool definitions byte for byte as the first
// request sent them, for every kind of session (each finishing tool, each
// hand-off cap), however many sessions the worker ran before.
func TestTranscriptRecordsToolDefinitionsAsSent(t *testing.T) {
	review := &agent.ReviewSubject{Report: mustReport(t, fakeopenai.ReportArgs{Status: "complete", Summary: "Done.", Evidence: []string{"ran it"}})}
	for _, tc := range []struct {
		name    string
		cap     int
		review  *agent.ReviewSubject
		finish  fakeopenai.Response
		finDesc string
		tools   int
	}{
		{"report", 16384, nil, submit(validContinue), "at most 16384 characters", 7},
		{"report again", 16384, nil, submit(validContinue), "at most 16384 characters", 7},
		{"report, own cap", 9000, nil, submit(validContinue), "at most 9000 characters", 7},
		{"review", 16384, review, fakeopenai.Tools(fakeopenai.CallJSON(agent.SubmitReviewTool, map[string]any{"verdict": "approve", "summary": "Fine.", "findings": []string{}})), `"name":"submit_review"`, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{tc.finish}})
			h.req.MaxHandoffChars, h.req.Review = tc.cap, tc.review
			var buf strings.Builder
			tr := agent.NewTranscript(&buf, testKey)
			if _, err := agent.RunSession(context.Background(), h.cfg, h.req, tr); err != nil {
				t.Fatal(err)
			}
			sent := sentTools(t, h.requests()[0])
			if got := transcriptDefinitions(t, buf.String()); !bytes.Equal(got, sent) {
				t.Errorf("transcript toolDefinitions differ from the tools sent:\n got %s\nsent %s", got, sent)
			}
			var tools []struct {
				Type     string `json:"type"`
				Function struct {
					Name       string         `json:"name"`
					Parameters map[string]any `json:"parameters"`
				} `json:"function"`
			}
			if err := json.Unmarshal(sent, &tools); err != nil || len(tools) != tc.tools {
				t.Fatalf("tools sent: %v (%d tools, want %d): %s", err, len(tools), tc.tools, sent)
			}
			for _, tl := range tools {
				if tl.Type != "function" || tl.Function.Parameters["type"] != "object" {
					t.Errorf("%s: sent as type %q with parameters %v, want a function with an object schema", tl.Function.Name, tl.Type, tl.Function.Parameters)
				}
			}
			if !strings.Contains(string(sent), tc.finDesc) {
				t.Errorf("the finishing tool's description does not say %q: %s", tc.finDesc, sent)
			}
		})
	}
}

// Sessions of one worker share what was built once: whatever one session's
// observer does to the definitions it is shown, the next session sends and
// records the same definitions as before.
func TestSessionsDoNotShareToolDefinitions(t *testing.T) {
	run := func(scribble bool) (sent, recorded json.RawMessage) {
		h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
		h.req.MaxHandoffChars = 12345 // a tool set no other test uses
		var buf strings.Builder
		tr := agent.NewTranscript(&buf, testKey)
		obs := agent.ObserverFunc(func(e agent.Event) {
			tr.Observe(e)
			if scribble {
				scribbleOver(e)
			}
		})
		if _, err := agent.RunSession(context.Background(), h.cfg, h.req, obs); err != nil {
			t.Fatal(err)
		}
		return sentTools(t, h.requests()[0]), transcriptDefinitions(t, buf.String())
	}
	firstSent, firstRecorded := run(true)
	nextSent, nextRecorded := run(false)
	if !bytes.Equal(firstSent, nextSent) || !bytes.Equal(firstRecorded, nextRecorded) {
		t.Errorf("a session's observer changed what the next session sends or records:\nfirst %s\n next %s", firstSent, nextSent)
	}
	if !bytes.Equal(nextSent, nextRecorded) || !strings.Contains(string(nextSent), "at most 12345 characters") {
		t.Errorf("sent %s\nrecorded %s", nextSent, nextRecorded)
	}
}

// scribbleOver changes every byte of the definitions an event carries.
func scribbleOver(e agent.Event) {
	for i := range e.ToolDefinitions {
		e.ToolDefinitions[i] = ' '
	}
}
