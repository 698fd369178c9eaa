package bench

import (
	"strings"
	"testing"
	"time"
)

func TestLanesGoalPerWorkerCount(t *testing.T) {
	walls := map[int]time.Duration{1: 190 * time.Second, 2: 120 * time.Second, 4: 77 * time.Second}
	g := lanesGoalOn(3, walls)
	if g.Verdict() != "not met" || !strings.HasPrefix(g.What, "3 worker(s)") || !strings.Contains(g.Measured, "0.41×") {
		t.Errorf("0.41 against 0.4: %+v (%s)", g, g.Verdict())
	}
	walls[4] = 68 * time.Second
	if g := lanesGoalOn(1, walls); g.Verdict() != "met" {
		t.Errorf("0.36 against 0.4: %+v (%s)", g, g.Verdict())
	}
	delete(walls, 4) // -lanes 1,2: nothing to judge
	if g := lanesGoalOn(1, walls); g.Verdict() != "not measured" {
		t.Errorf("without mergeLanes 4: %+v (%s)", g, g.Verdict())
	}
}

func TestCandidatesAndWarmGoals(t *testing.T) {
	g := candidatesGoalOf(map[int]time.Duration{1: 187 * time.Millisecond, 3: 1017 * time.Millisecond})
	if g.Verdict() != "not met" || !strings.Contains(g.Measured, "+830 ms") {
		t.Errorf("+830 ms against 200 ms: %+v (%s)", g, g.Verdict())
	}
	if g := candidatesGoalOf(map[int]time.Duration{1: 187 * time.Millisecond, 3: 380 * time.Millisecond}); g.Verdict() != "met" {
		t.Errorf("+193 ms against 200 ms: %+v (%s)", g, g.Verdict())
	}
	// Every warm merge must be within 1.3×, not only the median.
	g = warmGoalOf([]float64{1.0, 0.9, 1.31})
	if g.Verdict() != "not met" || !strings.Contains(g.Measured, "2 of 3 within") {
		t.Errorf("one merge at 1.31: %+v (%s)", g, g.Verdict())
	}
	if g := warmGoalOf(nil); g.Verdict() != "not measured" {
		t.Errorf("no warm merge: %+v (%s)", g, g.Verdict())
	}
}

func TestGoalsTableAndSectionShowVerdicts(t *testing.T) {
	secs := []Section{
		{Title: "lanes", Goals: []Goal{{What: "L4 ≤ 0.4×", Measured: "0.36×", Met: true}, {What: "3 workers"}}},
		{Title: "candidates", Goals: []Goal{{What: "+0.2 s", Measured: "+830 ms"}}},
	}
	tbl := GoalsTable(secs).Markdown()
	for _, want := range []string{"| lanes      | L4 ≤ 0.4× | 0.36×", "**met**", "**not measured**", "+830 ms  | **not met**"} {
		if !strings.Contains(tbl, want) {
			t.Errorf("goals table lacks %q:\n%s", want, tbl)
		}
	}
	if md := secs[1].Markdown(); !strings.Contains(md, "- goal: +0.2 s — +830 ms: **not met**") {
		t.Errorf("section:\n%s", md)
	}
}
