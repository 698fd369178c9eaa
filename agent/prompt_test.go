package agent_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

func TestRoundPromptTellsTheBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		verify   string
		deadline time.Duration
		guidance string
		want     []string
		dontWant []string
	}{
		{"no verify, no deadline", "", 0, "",
			[]string{"model calls: at most 100", "run_command times out after 2m0s", "at most 30m0s", "context: about 131072 tokens"},
			[]string{"round time", "will be checked", "Guidance from the operator"}},
		{"verify and deadline", "go test ./...", time.Hour, "",
			[]string{"round time: about 1h0m0s", "A complete report will be checked: the round runs `go test ./...` in the workspace, and only an exit code of 0 accepts it."},
			nil},
		{"guidance", "", 0, "Leave the parser alone; fix the lexer first.",
			[]string{"\n\nGuidance from the operator:\nLeave the parser alone; fix the lexer first.\n"},
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
			h.req.VerifyCommand = tc.verify
			h.req.Guidance = tc.guidance
			if tc.deadline > 0 {
				h.req.Deadline = time.Now().Add(tc.deadline)
			}
			if _, err := h.run(); err != nil {
				t.Fatal(err)
			}
			msgs := h.requests()[0].Chat.Messages
			prompt := msgs[1].Content
			for _, w := range tc.want {
				if !strings.Contains(prompt, w) {
					t.Errorf("round prompt lacks %q:\n%s", w, prompt)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(prompt, w) {
					t.Errorf("round prompt contains %q", w)
				}
			}
		})
	}
}

func TestSystemPromptIsTheSameForEverySession(t *testing.T) {
	var systems []string
	for _, verify := range []string{"", "make check"} {
		h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
		h.req.VerifyCommand = verify
		h.req.Round = 2
		if _, err := h.run(); err != nil {
			t.Fatal(err)
		}
		systems = append(systems, h.requests()[0].Chat.Messages[0].Content)
	}
	if systems[0] != systems[1] {
		t.Error("the system prompt depends on the run; it must depend on the deployment only (prompt caches)")
	}
}

func TestSubmitReportSchemaMatchesTheReport(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	var params json.RawMessage
	for _, tool := range h.requests()[0].Chat.Tools {
		if tool.Function.Name == "submit_report" {
			params, _ = json.Marshal(tool.Function.Parameters)
		}
	}
	var schema struct {
		Type                 string `json:"type"`
		AdditionalProperties bool   `json:"additionalProperties"`
		Required             []string
		Properties           map[string]struct {
			Type        string   `json:"type"`
			Enum        []string `json:"enum"`
			Description string   `json:"description"`
			Items       *struct {
				Type string `json:"type"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(params, &schema); err != nil {
		t.Fatalf("schema %s: %v", params, err)
	}
	// The keys of a report as it is encoded are exactly the schema's.
	data, _ := json.Marshal(report.Report{})
	var keys map[string]any
	_ = json.Unmarshal(data, &keys)
	want := slices.Sorted(maps.Keys(keys))
	if got := slices.Sorted(maps.Keys(schema.Properties)); !slices.Equal(got, want) {
		t.Errorf("schema properties %v, report keys %v", got, want)
	}
	if slices.Sort(schema.Required); !slices.Equal(schema.Required, want) {
		t.Errorf("required = %v, want all of %v", schema.Required, want)
	}
	if schema.Type != "object" || schema.AdditionalProperties {
		t.Errorf("schema = %s, want an object with additionalProperties false", params)
	}
	if !strings.Contains(string(params), `"additionalProperties":false`) {
		t.Errorf("additionalProperties:false is not sent: %s", params)
	}
	if got := schema.Properties["status"].Enum; !slices.Equal(got, []string{report.StatusContinue, report.StatusComplete, report.StatusBlocked}) {
		t.Errorf("status enum = %v", got)
	}
	for _, list := range []string{"evidence", "nextSteps"} {
		if p := schema.Properties[list]; p.Type != "array" || p.Items == nil || p.Items.Type != "string" || p.Description == "" {
			t.Errorf("%s = %+v", list, p)
		}
	}
}

func TestSessionBoundsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		want  string
	}{
		{"context tokens", func(h *harness) { h.cfg.ContextTokens = 0 }, "context tokens must be at least 1"},
		{"verify attempts", func(h *harness) { h.cfg.VerifyAttempts = 0 }, "verify attempts must be at least 1"},
		{"verify timeout", func(h *harness) { h.cfg.VerifyTimeout = 0 }, "verify timeout must be positive"},
		{"output limit", func(h *harness) { h.cfg.MaxOutputTokens = -1 }, "max output tokens must be at least 0"},
		{"token budget", func(h *harness) { h.req.TokenBudget = -5 }, "token budget is negative (-5)"},
		{"verify command", func(h *harness) { h.req.VerifyCommand = "  " }, "verify command is only whitespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
			tc.setup(h)
			_, err := h.run()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to say %q", err, tc.want)
			}
			if n := len(h.requests()); n != 0 {
				t.Errorf("%d model requests with a bad setting", n)
			}
		})
	}
}
