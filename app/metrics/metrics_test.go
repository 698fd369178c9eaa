package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ralph-temporal/ralph/activities"
)

// Scrape reads addr's /metrics into families keyed by name.
func scrape(t *testing.T, addr string) map[string]*familyView {
	t.Helper()
	resp, err := http.Get("http://" + addr + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	out := map[string]*familyView{}
	for name, f := range fams {
		v := &familyView{kind: f.GetType().String(), values: map[string]float64{}}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := strings.Join(labels, ",")
			switch {
			case m.Counter != nil:
				v.values[key] = m.Counter.GetValue()
			case m.Histogram != nil:
				v.values[key] = float64(m.Histogram.GetSampleCount())
				v.buckets = len(m.Histogram.GetBucket()) // the exporter lists +Inf too
			}
		}
		out[name] = v
	}
	return out
}

type familyView struct {
	kind    string
	values  map[string]float64
	buckets int
}

func TestRalphMetricsAreExportedUnderTheirPrometheusNames(t *testing.T) {
	m, err := New(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err := m.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	h := m.Handler()
	h.WithTags(map[string]string{activities.LabelOutcome: "complete"}).Counter(activities.MetricRounds).Inc(2)
	h.WithTags(map[string]string{activities.LabelOutcome: "complete"}).Timer(activities.MetricRoundDuration).Record(90 * time.Second)
	h.WithTags(map[string]string{activities.LabelKind: activities.TokenKindPrompt}).Counter(activities.MetricTokens).Inc(120)
	h.Timer("temporal_request_latency").Record(20 * time.Millisecond)

	got := scrape(t, addr)
	if f := got["ralph_rounds_total"]; f == nil || f.kind != "COUNTER" || f.values["outcome=complete"] != 2 {
		t.Errorf("ralph_rounds_total = %+v", f)
	}
	if f := got["ralph_tokens_total"]; f == nil || f.values["kind=prompt"] != 120 {
		t.Errorf("ralph_tokens_total = %+v", f)
	}
	if f := got["ralph_round_duration_seconds"]; f == nil || f.kind != "HISTOGRAM" || f.values["outcome=complete"] != 1 || f.buckets != len(roundBuckets())+1 {
		t.Errorf("ralph_round_duration_seconds = %+v (want the round buckets)", f)
	}
	if f := got["temporal_request_latency_seconds"]; f == nil || f.buckets != len(latencyBuckets())+1 {
		t.Errorf("temporal_request_latency_seconds = %+v (want the latency buckets)", f)
	}
}

func TestServeRefusesABadAddress(t *testing.T) {
	m, err := New(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Serve("256.0.0.1:bad"); err == nil || !strings.Contains(err.Error(), "RALPH_METRICS_ADDRESS") {
		t.Fatalf("want an error naming RALPH_METRICS_ADDRESS, got %v", err)
	}
}
