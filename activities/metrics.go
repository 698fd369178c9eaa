package activities

import (
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/usage"
)

// Ralph's metric names as recorded through the SDK's metrics handler. The
// Prometheus exporter adds "_total" to counters and the unit to histograms,
// so these are scraped as ralph_rounds_total, ralph_model_calls_total,
// ralph_tokens_total, ralph_tool_calls_total, ralph_verifications_total and
// ralph_round_duration_seconds.
const (
	MetricRounds        = "ralph_rounds"
	MetricModelCalls    = "ralph_model_calls"
	MetricTokens        = "ralph_tokens"
	MetricToolCalls     = "ralph_tool_calls"
	MetricVerifications = "ralph_verifications"
	MetricRoundDuration = "ralph_round_duration"
)

// Label names and the bounded label values Ralph's metrics use. Workflow
// ids and workspaces never become labels: they are unbounded.
const (
	LabelOutcome = "outcome"
	LabelKind    = "kind"
	LabelTool    = "tool"
	LabelResult  = "result"
	// LabelModel is the model a call went to: deployment-owned names (the
	// model and its fallbacks), so the label set stays bounded.
	LabelModel = "model"

	TokenKindPrompt     = "prompt"
	TokenKindCompletion = "completion"
	VerifyPass          = "pass"
	VerifyFail          = "fail"
	// OtherTool is the tool label of a call to a tool the session did not offer.
	OtherTool = "other"
)

// roundTally watches a session's events for what its usage does not break
// down: tool calls per tool and verification results.
type roundTally struct {
	offered map[string]bool
	tools   map[string]int64
	models  map[string]int64 // completed model calls per model
	pass    int64
	fail    int64
}

func newRoundTally() *roundTally {
	return &roundTally{offered: map[string]bool{}, tools: map[string]int64{}, models: map[string]int64{}}
}

// Observe implements agent.Observer. A tool counts under its own name only
// when the session offered it, so a model inventing names cannot grow the
// label set.
func (t *roundTally) Observe(e agent.Event) {
	switch {
	case e.Kind == agent.EventModelRequest:
		for _, name := range e.Tools {
			t.offered[name] = true
		}
	case e.Kind == agent.EventModelResponse:
		t.models[e.Model]++
	case e.Kind == agent.EventVerifyResult:
		if e.Failed {
			t.fail++
		} else {
			t.pass++
		}
	case e.Kind == agent.EventToolCall:
		name := e.Tool
		if !t.offered[name] {
			name = OtherTool
		}
		t.tools[name]++
	}
}

// roundOutcome is the outcome label: the report's status for a round that
// handed off, else how the session ended (agent.Outcome*).
func roundOutcome(res agent.Result, err error) string {
	if err == nil {
		return res.Report.Status
	}
	return agent.Outcome(err)
}

// record adds one finished round attempt to h.
func (t *roundTally) record(h client.MetricsHandler, outcome string, u usage.Usage, took time.Duration) {
	h.WithTags(map[string]string{LabelOutcome: outcome}).Counter(MetricRounds).Inc(1)
	h.WithTags(map[string]string{LabelOutcome: outcome}).Timer(MetricRoundDuration).Record(took)
	t.recordUsage(h, u)
}

// recordUsage adds a session's model calls, tokens, tool calls and
// verifications to h (a round's or a reviewer's).
func (t *roundTally) recordUsage(h client.MetricsHandler, u usage.Usage) {
	for model, n := range t.models {
		h.WithTags(map[string]string{LabelModel: model}).Counter(MetricModelCalls).Inc(n)
	}
	h.WithTags(map[string]string{LabelKind: TokenKindPrompt}).Counter(MetricTokens).Inc(int64(u.PromptTokens))
	h.WithTags(map[string]string{LabelKind: TokenKindCompletion}).Counter(MetricTokens).Inc(int64(u.CompletionTokens))
	for name, n := range t.tools {
		h.WithTags(map[string]string{LabelTool: name}).Counter(MetricToolCalls).Inc(n)
	}
	// Both results are recorded even at zero, so a pass rate is defined (and
	// graphed) from the first round on.
	h.WithTags(map[string]string{LabelResult: VerifyPass}).Counter(MetricVerifications).Inc(t.pass)
	h.WithTags(map[string]string{LabelResult: VerifyFail}).Counter(MetricVerifications).Inc(t.fail)
}
