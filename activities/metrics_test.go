package activities

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// capture is a client.MetricsHandler that sums what is recorded, keyed by
// "name{k=v,...}".
type capture struct {
	tags   map[string]string
	mu     *sync.Mutex
	values map[string]float64
}

func newCapture() *capture {
	return &capture{tags: map[string]string{}, mu: &sync.Mutex{}, values: map[string]float64{}}
}

func (c *capture) key(name string) string {
	keys := slices.Sorted(maps.Keys(c.tags))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + c.tags[k]
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func (c *capture) add(name string, v float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values[c.key(name)] += v
}

func (c *capture) WithTags(tags map[string]string) client.MetricsHandler {
	n := &capture{tags: maps.Clone(c.tags), mu: c.mu, values: c.values}
	maps.Copy(n.tags, tags)
	return n
}

type counterFunc func(int64)
type gaugeFunc func(float64)
type timerFunc func(time.Duration)

func (f counterFunc) Inc(d int64)          { f(d) }
func (f gaugeFunc) Update(v float64)       { f(v) }
func (f timerFunc) Record(d time.Duration) { f(d) }
func (c *capture) Counter(n string) client.MetricsCounter {
	return counterFunc(func(d int64) { c.add(n, float64(d)) })
}
func (c *capture) Gauge(n string) client.MetricsGauge {
	return gaugeFunc(func(v float64) { c.add(n, v) })
}
func (c *capture) Timer(n string) client.MetricsTimer {
	return timerFunc(func(d time.Duration) { c.add(n, d.Seconds()) })
}

func TestRoundTallyRecordsBoundedLabels(t *testing.T) {
	tally := newRoundTally()
	for _, e := range []agent.Event{
		{Kind: agent.EventModelRequest, Tools: []string{"read_file", "run_command", "submit_report"}},
		{Kind: agent.EventModelResponse, Model: "primary"},
		{Kind: agent.EventModelResponse, Model: "primary"},
		{Kind: agent.EventModelResponse, Model: "primary"},
		// The fallback model answered the last call.
		{Kind: agent.EventModelResponse, Model: "fallback"},
		{Kind: agent.EventToolCall, Tool: "read_file"},
		{Kind: agent.EventToolResult, Tool: "read_file"},
		{Kind: agent.EventToolCall, Tool: "run_command"},
		{Kind: agent.EventToolCall, Tool: "read_file"},
		// A name the session did not offer folds into one label value.
		{Kind: agent.EventToolCall, Tool: "rm -rf / workflow-1234"},
		{Kind: agent.EventToolCall, Tool: "bash"},
		// A model calling a tool named like the verify step is just a tool call.
		{Kind: agent.EventToolCall, Tool: agent.VerifyTool},
		{Kind: agent.EventToolResult, Tool: agent.VerifyTool, Failed: true},
		{Kind: agent.EventModelRequest, Tools: []string{"submit_report"}},
		{Kind: agent.EventToolCall, Tool: "submit_report"},
		{Kind: agent.EventVerifyStart, Tool: agent.VerifyTool},
		{Kind: agent.EventVerifyResult, Tool: agent.VerifyTool, Failed: true},
		{Kind: agent.EventToolCall, Tool: "submit_report"},
		{Kind: agent.EventVerifyStart, Tool: agent.VerifyTool},
		{Kind: agent.EventVerifyResult, Tool: agent.VerifyTool},
	} {
		tally.Observe(e)
	}
	h := newCapture()
	tally.record(h, "complete", usage.Usage{ModelCalls: 4, ToolCalls: 7, PromptTokens: 1000, CompletionTokens: 250}, 3*time.Second)
	want := map[string]float64{
		"ralph_rounds{outcome=complete}":         1,
		"ralph_round_duration{outcome=complete}": 3,
		"ralph_model_calls{model=primary}":       3,
		"ralph_model_calls{model=fallback}":      1,
		"ralph_tokens{kind=prompt}":              1000,
		"ralph_tokens{kind=completion}":          250,
		"ralph_tool_calls{tool=read_file}":       2,
		"ralph_tool_calls{tool=run_command}":     1,
		"ralph_tool_calls{tool=submit_report}":   2,
		"ralph_tool_calls{tool=other}":           3,
		"ralph_verifications{result=pass}":       1,
		"ralph_verifications{result=fail}":       1,
	}
	if !maps.Equal(h.values, want) {
		t.Fatalf("recorded %v\nwant %v", h.values, want)
	}
}

func TestReviewsCountedByVerdict(t *testing.T) {
	h := newCapture()
	for _, v := range []string{report.VerdictApprove, report.VerdictRevise, report.VerdictRevise, agent.OutcomeChildFailure} {
		tally := newRoundTally()
		tally.Observe(agent.Event{Kind: agent.EventModelRequest, Tools: []string{"read_file", "submit_review"}})
		tally.Observe(agent.Event{Kind: agent.EventModelResponse, Model: "judge"})
		tally.Observe(agent.Event{Kind: agent.EventToolCall, Tool: "submit_review"})
		tally.recordReview(h, v, usage.Usage{ModelCalls: 1, ToolCalls: 1, PromptTokens: 10, CompletionTokens: 2})
	}
	for key, want := range map[string]float64{
		"ralph_reviews{verdict=approve}":       1,
		"ralph_reviews{verdict=revise}":        2,
		"ralph_reviews{verdict=child_failure}": 1,
		"ralph_model_calls{model=judge}":       4,
		"ralph_tokens{kind=prompt}":            40,
		"ralph_tool_calls{tool=submit_review}": 4,
	} {
		if h.values[key] != want {
			t.Errorf("%s = %v, want %v (all: %v)", key, h.values[key], want, h.values)
		}
	}
	for key := range h.values {
		if strings.HasPrefix(key, "ralph_rounds") {
			t.Errorf("a review counted as a round: %s", key)
		}
	}
}

func TestRoundOutcome(t *testing.T) {
	ok := agent.Result{Report: report.Report{Status: report.StatusContinue}}
	if got := roundOutcome(ok, nil); got != "continue" {
		t.Errorf("handed-off round: %q", got)
	}
	if got := roundOutcome(agent.Result{}, errors.New("disk full")); got != agent.OutcomeHarnessError {
		t.Errorf("harness failure: %q", got)
	}
}
