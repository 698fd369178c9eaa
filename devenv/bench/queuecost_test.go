package bench

import (
	"strings"
	"testing"
)

// Output as the activities' test binary prints it (go1.26, two cores),
// with a failed benchmark's lines before the one asked for.
const benchOutput = `goos: linux
goarch: amd64
pkg: github.com/ralph-temporal/ralph/activities
cpu: AMD EPYC
BenchmarkQueueCostDemo-2   	      20	       140.2 git-cpu-ms	       171.0 p50-ms	       200.5 p95-ms
BenchmarkQueueCostLargeJailed-2   	       5	       461.0 git-cpu-ms	      1330 p50-ms	      1550 p95-ms	  12 tree-copy-ms
PASS
`

func TestParseBenchOutputReadsEveryMetric(t *testing.T) {
	r, ok := parseBenchOutput(benchOutput, "BenchmarkQueueCostLargeJailed")
	if !ok {
		t.Fatal("no result line found")
	}
	if r.N != 5 || len(r.Metrics) != 4 {
		t.Fatalf("got %+v, want 5 steps and 4 metrics", r)
	}
	if p50, _ := r.Metric("p50-ms"); p50 != 1330 {
		t.Errorf("p50-ms = %v, want 1330", p50)
	}
	if v, ok := r.Metric("tree-copy-ms"); !ok || v != 12 {
		t.Errorf("a metric the table does not know (tree-copy-ms) = %v, %v", v, ok)
	}
	// A name that is a prefix of another's must not match it.
	if _, ok := parseBenchOutput(benchOutput, "BenchmarkQueueCostLarge"); ok {
		t.Error("BenchmarkQueueCostLarge matched BenchmarkQueueCostLargeJailed's line")
	}
}

func TestQueueCostGoalsFromTheNumbers(t *testing.T) {
	demo, _ := parseBenchOutput(benchOutput, "BenchmarkQueueCostDemo")
	large, _ := parseBenchOutput(benchOutput, "BenchmarkQueueCostLargeJailed")
	if g := queueCostGoal(demo); g.Verdict() != "not met" || !strings.Contains(g.What, "100ms") || g.Measured != "p50 171.0 ms" {
		t.Errorf("demo at 171 ms against 100 ms: %+v (%s)", g, g.Verdict())
	}
	if g := queueCostGoal(large); g.Verdict() != "not met" || !strings.Contains(g.What, "1s") {
		t.Errorf("large at 1330 ms against 1 s: %+v (%s)", g, g.Verdict())
	}
	large.Metrics[1].Value = 999
	if g := queueCostGoal(large); g.Verdict() != "met" {
		t.Errorf("large at 999 ms against 1 s: %+v (%s)", g, g.Verdict())
	}
	tbl := queueCostTable([]benchResult{demo, large}).Markdown()
	for _, want := range []string{"tree-copy-ms", "| QueueCostDemo ", "demo (3 files)", "10,000 files, 100 MB"} {
		if !strings.Contains(tbl, want) {
			t.Errorf("table lacks %q:\n%s", want, tbl)
		}
	}
}

func TestQueueCostFailedBenchmarkKeepsItsRow(t *testing.T) {
	demo, _ := parseBenchOutput(benchOutput, "BenchmarkQueueCostDemo")
	failed := benchResult{Name: "BenchmarkPrepareTaskLarge", Failed: true}
	if g := queueCostGoal(failed); g.Verdict() != "not measured" {
		t.Errorf("a failed benchmark's goal: %+v (%s)", g, g.Verdict())
	}
	tbl := queueCostTable([]benchResult{demo, failed}).Markdown()
	if !strings.Contains(tbl, "| PrepareTaskLarge | 10,000 files, 100 MB | failed |") || !strings.Contains(tbl, "| 171 ") {
		t.Errorf("table:\n%s", tbl)
	}
}
