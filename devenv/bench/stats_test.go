package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	xs := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for p, want := range map[float64]time.Duration{50: 5, 95: 10, 10: 1, 100: 10} {
		if got := Percentile(xs, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty percentile is not 0")
	}
	tb := Table{Header: []string{"a", "bb"}}
	tb.Add("1", "2")
	if !strings.Contains(tb.Markdown(), "| 1 | 2  |") {
		t.Errorf("table:\n%s", tb.Markdown())
	}
}
