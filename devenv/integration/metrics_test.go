package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// scrapeMetrics parses a worker's /metrics.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sumWhere sums a counter family's series (or a histogram's sample counts)
// whose labels include label=value; an empty label sums every series.
func sumWhere(f *dto.MetricFamily, label, value string) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		match := label == ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				match = true
			}
		}
		if !match {
			continue
		}
		if m.Counter != nil {
			sum += m.Counter.GetValue()
		}
		if m.Histogram != nil {
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// After a real run, /metrics has every Ralph metric with the values the run
// produced, the SDK's own metrics, and no unbounded label values.
func TestRealStackMetrics(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() == 0:
			return tool("write_file", map[string]string{"path": "a.txt", "content": "a\n"})
		case tn.Round() == 1 && tn.Step() == 1:
			return tool("read_file", map[string]string{"path": "a.txt"})
		case tn.Round() == 1 && tn.Step() == 2:
			return tool("made_up_tool", map[string]string{})
		case tn.Round() == 1:
			return submit(continueArgs("wrote a.txt", "check a.txt"))
		}
		return submit(completeArgs("a.txt checked", "a.txt exists"))
	}), "RALPH_METRICS_ADDRESS="+addr)
	e.startWorker()
	const id, workspace = "metrics-run-7731", "metrics-ws-7731"
	res, err := e.result(e.start(id, `{"objective":"write a.txt","workspace":"`+workspace+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "complete" || res.RoundsStarted != 2 {
		t.Fatalf("result %+v", res)
	}

	fams := scrapeMetrics(t, addr)
	get := func(name string) *dto.MetricFamily {
		f := fams[name]
		if f == nil {
			t.Fatalf("/metrics lacks %s", name)
		}
		return f
	}
	checks := []struct {
		family, label, value string
		want                 float64
	}{
		{"ralph_rounds_total", "outcome", "continue", 1},
		{"ralph_rounds_total", "outcome", "complete", 1},
		{"ralph_rounds_total", "", "", 2},
		{"ralph_model_calls_total", "", "", float64(res.Usage.ModelCalls)},
		{"ralph_tokens_total", "kind", "prompt", float64(res.Usage.PromptTokens)},
		{"ralph_tokens_total", "kind", "completion", float64(res.Usage.CompletionTokens)},
		{"ralph_tool_calls_total", "tool", "write_file", 1},
		{"ralph_tool_calls_total", "tool", "read_file", 1},
		{"ralph_tool_calls_total", "tool", "submit_report", 2},
		{"ralph_tool_calls_total", "tool", "other", 1},
		{"ralph_tool_calls_total", "", "", float64(res.Usage.ToolCalls)},
		{"ralph_verifications_total", "result", "pass", 0},
		{"ralph_verifications_total", "result", "fail", 0},
		{"ralph_round_duration_seconds", "outcome", "continue", 1},
		{"ralph_round_duration_seconds", "", "", 2},
	}
	for _, c := range checks {
		if got := sumWhere(get(c.family), c.label, c.value); got != c.want {
			t.Errorf("%s{%s=%q} = %v, want %v", c.family, c.label, c.value, got, c.want)
		}
	}
	if res.Usage.ModelCalls != 5 || res.Usage.PromptTokens == 0 {
		t.Errorf("usage %+v: the script makes 5 model calls with tokens", res.Usage)
	}
	if sumWhere(get("ralph_verifications_total"), "result", "pass") != 0 || len(get("ralph_verifications_total").GetMetric()) < 2 {
		t.Error("ralph_verifications_total lacks its pass and fail series")
	}
	if got := sumWhere(get("temporal_request_total"), "", ""); got <= 0 {
		t.Errorf("SDK metric temporal_request_total = %v", got)
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "ralph_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "7731") || strings.Contains(l.GetValue(), "made_up") {
					t.Errorf("%s has an unbounded label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}
