package main

import (
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/bench"
)

func checked(t *testing.T, only string, edit func(*options)) (options, error) {
	t.Helper()
	o := options{only: only, scaleRuns: "10", scaleSlots: "8", crashHB: "5", mergeLanes: "1,2,4", lanesWorkers: "1,3",
		lanesTasks: 16, queueCostDemo: 20, queueCostBig: 5, warmTasks: 6}
	if edit != nil {
		edit(&o)
	}
	return o, o.check()
}

func TestOnlySection41NamesItsFourBenchmarks(t *testing.T) {
	o, err := checked(t, "section41", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lanes", "queuecost", "candidates", "warmcampaign"} {
		if !o.want[name] {
			t.Errorf("section41 does not run %s: %v", name, o.want)
		}
	}
	if len(o.want) != 4 {
		t.Errorf("section41 runs %v, want only the four", o.want)
	}
	if len(o.lanesList) != 3 || len(o.workersList) != 2 || o.workersList[1] != 3 {
		t.Errorf("lanes %v on workers %v, want 1,2,4 on 1,3", o.lanesList, o.workersList)
	}
}

func TestBadSection41FlagsNameTheFlag(t *testing.T) {
	for flagName, edit := range map[string]func(*options){
		"-lanes-workers":        func(o *options) { o.lanesWorkers = "1,x" },
		"-warmcampaign-tasks":   func(o *options) { o.warmTasks = 1 },
		"-lanes:":               func(o *options) { o.mergeLanes = "0" },
		"-lanes-tasks":          func(o *options) { o.lanesTasks = 0 },
		"-queuecost-large-step": func(o *options) { o.queueCostBig = 0 },
	} {
		if _, err := checked(t, "section41", edit); err == nil || !strings.Contains(err.Error(), flagName) {
			t.Errorf("%s wrong: error %v does not name it", flagName, err)
		}
	}
}

func TestGoalsSummaryNamesFailuresInOneLine(t *testing.T) {
	secs := []bench.Section{
		{Title: "lanes", Goals: []bench.Goal{{What: "L4", Measured: "0.36×", Met: true}}},
		{Title: "queuecost", Goals: []bench.Goal{{What: "large"}}, Notes: []string{"**benchmark failed:** Large: exit 1\n--- FAIL\nlong output"}},
	}
	md := goalsSummary(secs)
	for _, want := range []string{"## Goals", "| L4    | 0.36×    | **met**", "**not measured**", "- queuecost: **benchmark failed:** Large: exit 1\n\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "long output") {
		t.Errorf("summary repeats the failure's output:\n%s", md)
	}
	if goalsSummary([]bench.Section{{Title: "overhead"}}) != "" {
		t.Error("a run without goals got a goals summary")
	}
}
