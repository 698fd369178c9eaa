package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/activities"
)

// Two rounds of three candidates and an adoption: each step is the span
// between the history's timestamps it names, and the worker's lines add
// their steps; a plain round's line has no tree step.
func TestCandidateStepsSplitRoundsFromHistoryAndLog(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	run := func(task int64, sched, start, done int) *activitySpan {
		return &activitySpan{kind: activities.RunRoundName, task: task, scheduled: at(sched), started: at(start), completed: at(done)}
	}
	spans := []*activitySpan{
		run(4, 0, 1, 300), run(4, 0, 2, 500), run(4, 0, 3, 400),
		{kind: activities.AdoptCandidateName, task: 20, scheduled: at(540), started: at(541), completed: at(600)},
		run(30, 650, 651, 800), run(30, 650, 655, 900), run(30, 650, 652, 700),
	}
	st := stepTimes{}
	addHistorySteps(st, spans)
	want := map[string][]time.Duration{
		historySteps[0]: {3 * time.Millisecond, 5 * time.Millisecond},
		historySteps[1]: {498 * time.Millisecond, 245 * time.Millisecond},
		historySteps[2]: {500 * time.Millisecond, 250 * time.Millisecond},
		historySteps[3]: {200 * time.Millisecond, 200 * time.Millisecond},
		historySteps[4]: {40 * time.Millisecond},
		historySteps[5]: {60 * time.Millisecond},
		historySteps[6]: {50 * time.Millisecond},
		historySteps[7]: {650 * time.Millisecond},
	}
	for name, w := range want {
		if got := st[name]; len(got) != len(w) || (len(w) > 0 && got[0] != w[0]) || (len(w) > 1 && got[1] != w[1]) {
			t.Errorf("%s: %v, want %v", name, got, w)
		}
	}

	log := filepath.Join(t.TempDir(), "worker.log")
	lines := `{"time":"x","level":"INFO","msg":"Round started","round":1}
{"time":"x","level":"INFO","msg":"Round steps","round":1,"candidate":2,"lockMs":12.5,"prepareMs":40,"editsMs":3,"treeMs":30,"sessionMs":20,"keepMs":100,"scoreMs":0}
not json
{"time":"x","level":"INFO","msg":"Round steps","round":1,"candidate":0,"lockMs":0.1,"prepareMs":50,"sessionMs":25,"keepMs":80}
`
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := stepTimes{}
	if err := addWorkerSteps(ws, log); err != nil {
		t.Fatal(err)
	}
	if got := ws[workerStepNames["lock"]]; len(got) != 2 || got[0] != 12500*time.Microsecond {
		t.Errorf("lock %v, want 12.5 ms then 0.1 ms", got)
	}
	if got := ws[workerStepNames["tree"]]; len(got) != 1 || got[0] != 30*time.Millisecond {
		t.Errorf("tree %v, want the candidate's 30 ms alone", got)
	}
	tbl := stepsTable([]int{1, 3}, map[int]stepTimes{1: ws, 3: st})
	md := tbl.Markdown()
	if !strings.Contains(md, "| "+workerStepNames["keep"]) || !strings.Contains(md, "| "+historySteps[4]) {
		t.Fatalf("table lacks a step's row:\n%s", md)
	}
}
