package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/tasklist"
)

func task(id string, deps ...string) tasklist.Task {
	return tasklist.Task{ID: id, Objective: "Do " + id + ".", DependsOn: deps}
}

func tasksPlan(ts ...tasklist.Task) Plan {
	return Plan{Status: StatusTasks, Summary: "Split the objective.", Tasks: ts}
}

func TestValidPlans(t *testing.T) {
	one := 1
	for name, c := range map[string]struct {
		p Plan
		r Rules
	}{
		"tasks":                {tasksPlan(task("a"), task("b", "a"), task("c", "a", "b")), Rules{}},
		"depends on merged":    {tasksPlan(task("c", "old")), Rules{KnownIDs: []string{"old"}, MergedIDs: []string{"old"}}},
		"at the ceiling":       {tasksPlan(task("a"), task("b")), Rules{MaxTasks: 2}},
		"task fields":          {tasksPlan(tasklist.Task{ID: "a", Objective: "x", VerifyCommand: "make test", MaxRounds: &one}), Rules{}},
		"complete":             {Plan{Status: StatusComplete, Summary: "Done.", Evidence: []string{"make test passes on the head"}}, Rules{}},
		"blocked":              {Plan{Status: StatusBlocked, Summary: "Stuck.", Blocker: "The API key is missing."}, Rules{}},
		"tasks with evidence":  {Plan{Status: StatusTasks, Summary: "s", Tasks: []tasklist.Task{task("a")}, Evidence: []string{"e"}}, Rules{}},
		"objective at its cap": {tasksPlan(tasklist.Task{ID: "a", Objective: strings.Repeat("é", 10)}), Rules{MaxObjectiveChars: 10}},
	} {
		if err := Validate(c.p, c.r); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Every rule a plan can break is named by the error, with where.
func TestPlanRules(t *testing.T) {
	zero := 0
	many := make([]tasklist.Task, 31)
	for i := range many {
		many[i] = task(fmt.Sprintf("t%d", i))
	}
	for name, c := range map[string]struct {
		p    Plan
		r    Rules
		rule string
		text string
	}{
		"status":                 {Plan{Status: "continue", Summary: "s"}, Rules{}, RuleStatus, `got "continue"`},
		"empty summary":          {Plan{Status: StatusBlocked, Summary: "  ", Blocker: "b"}, Rules{}, RuleSummary, "summary must not be empty"},
		"untrimmed summary":      {Plan{Status: StatusBlocked, Summary: " s", Blocker: "b"}, Rules{}, RuleSummary, "trimmed"},
		"long summary":           {Plan{Status: StatusBlocked, Summary: strings.Repeat("s", MaxSummaryChars+1), Blocker: "b"}, Rules{}, RuleSize, "summary is 2001 characters"},
		"no tasks":               {tasksPlan(), Rules{}, RuleTaskCount, "1 to 30 tasks"},
		"too many tasks":         {tasksPlan(many...), Rules{}, RuleTaskCount, "got 31"},
		"over a lower ceiling":   {tasksPlan(task("a"), task("b"), task("c")), Rules{MaxTasks: 2}, RuleTaskCount, "1 to 2 tasks"},
		"bad id":                 {tasksPlan(task("A_b")), Rules{}, RuleTask, `tasks[0]: task id "A_b" must be lower-case`},
		"no objective":           {tasksPlan(tasklist.Task{ID: "a", Objective: " "}), Rules{}, RuleTask, `task "a" has no objective`},
		"duplicate id":           {tasksPlan(task("a"), task("a")), Rules{}, RuleUniqueID, "tasks[1]: id \"a\" is already used by tasks[0]"},
		"known id":               {tasksPlan(task("old")), Rules{KnownIDs: []string{"old"}}, RuleUniqueID, "unique across the whole campaign"},
		"self dependency":        {tasksPlan(task("a", "a")), Rules{}, RuleDependency, "names the task itself"},
		"unknown dependency":     {tasksPlan(task("a", "ghost")), Rules{}, RuleDependency, `names "ghost", which is neither`},
		"unmerged old":           {tasksPlan(task("a", "old")), Rules{KnownIDs: []string{"old"}}, RuleDependency, `names "old"`},
		"cycle":                  {tasksPlan(task("a", "c"), task("b", "a"), task("c", "b")), Rules{}, RuleCycle, "a -> c -> b -> a"},
		"complete, no evidence":  {Plan{Status: StatusComplete, Summary: "s"}, Rules{}, RuleEvidence, "at least one evidence item"},
		"complete with tasks":    {Plan{Status: StatusComplete, Summary: "s", Evidence: []string{"e"}, Tasks: []tasklist.Task{task("a")}}, Rules{}, RuleNoTasks, "complete plan has no tasks"},
		"complete with blocker":  {Plan{Status: StatusComplete, Summary: "s", Evidence: []string{"e"}, Blocker: "b"}, Rules{}, RuleBlocker, "unless status is blocked"},
		"blocked, no blocker":    {Plan{Status: StatusBlocked, Summary: "s"}, Rules{}, RuleBlocker, "blocker must not be empty"},
		"blocked with tasks":     {Plan{Status: StatusBlocked, Summary: "s", Blocker: "b", Tasks: []tasklist.Task{task("a")}}, Rules{}, RuleNoTasks, "blocked plan has no tasks"},
		"tasks with blocker":     {Plan{Status: StatusTasks, Summary: "s", Blocker: "b", Tasks: []tasklist.Task{task("a")}}, Rules{}, RuleBlocker, "unless status is blocked"},
		"empty evidence":         {Plan{Status: StatusComplete, Summary: "s", Evidence: []string{""}}, Rules{}, RuleEvidence, "evidence[0] must not be empty"},
		"too much evidence":      {Plan{Status: StatusComplete, Summary: "s", Evidence: make([]string, MaxEvidenceItems+1)}, Rules{}, RuleSize, "evidence has 21 items"},
		"long evidence":          {Plan{Status: StatusComplete, Summary: "s", Evidence: []string{strings.Repeat("e", MaxEvidenceChars+1)}}, Rules{}, RuleSize, "evidence[0] is 1001 characters"},
		"long blocker":           {Plan{Status: StatusBlocked, Summary: "s", Blocker: strings.Repeat("b", MaxBlockerChars+1)}, Rules{}, RuleSize, "blocker is 2001"},
		"long objective":         {tasksPlan(tasklist.Task{ID: "a", Objective: strings.Repeat("é", 11)}), Rules{MaxObjectiveChars: 10}, RuleSize, "objective is 11 characters, over the limit of 10"},
		"too many dependencies":  {tasksPlan(tasklist.Task{ID: "a", Objective: "o", DependsOn: make([]string, MaxDependencies+1)}), Rules{}, RuleSize, "dependsOn has 65 ids"},
		"long verify command":    {tasksPlan(tasklist.Task{ID: "a", Objective: "o", VerifyCommand: strings.Repeat("v", MaxVerifyCommandChars+1)}), Rules{}, RuleSize, "verifyCommand is 4097"},
		"zero max rounds":        {tasksPlan(tasklist.Task{ID: "a", Objective: "o", MaxRounds: &zero}), Rules{}, RuleTask, "maxRounds must be at least 1"},
		"too many protections":   {tasksPlan(tasklist.Task{ID: "a", Objective: "o", ProtectedPaths: make([]string, MaxProtectedPatterns+1)}), Rules{}, RuleSize, "protectedPaths has 65"},
		"blank verify command":   {tasksPlan(tasklist.Task{ID: "a", Objective: "o", VerifyCommand: "  "}), Rules{}, RuleTask, "verifyCommand must not be empty"},
		"first broken rule wins": {Plan{Status: "x"}, Rules{}, RuleStatus, "status must be one of"},
	} {
		err := Validate(c.p, c.r)
		var re *RuleError
		if !errors.As(err, &re) {
			t.Errorf("%s: error %v, want a RuleError", name, err)
			continue
		}
		if re.Rule != c.rule || !strings.Contains(err.Error(), c.text) || !strings.HasPrefix(err.Error(), `rule "`+c.rule+`": `) {
			t.Errorf("%s: got %q (rule %q), want rule %q and %q", name, err, re.Rule, c.rule, c.text)
		}
	}
}

func report(failure, verifyTail string) WaveReport {
	r := WaveReport{Wave: 2, Summary: "Three tasks.", Tasks: []TaskOutcome{
		{ID: "a", Outcome: "merged", MergeCommit: strings.Repeat("a", 40)},
		{ID: "b", Outcome: "failed", Failure: failure},
		{ID: "c", Outcome: "failed", Failure: failure + failure},
	}}
	if verifyTail != "" {
		r.Verify = &HeadVerify{Command: "make test", Head: strings.Repeat("f", 40), ExitCode: 2, OutputTail: verifyTail}
	}
	return r
}

func TestWaveReportValidate(t *testing.T) {
	for name, r := range map[string]WaveReport{
		"wave 0":        {Wave: 0},
		"bad id":        {Wave: 1, Tasks: []TaskOutcome{{ID: "B!", Outcome: "merged"}}},
		"no outcome":    {Wave: 1, Tasks: []TaskOutcome{{ID: "b"}}},
		"verify, no id": {Wave: 1, Verify: &HeadVerify{Command: "x"}},
	} {
		var re *RuleError
		if err := r.Validate(); !errors.As(err, &re) || re.Rule != RuleWaveReport {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := report("boom", "tail").Validate(); err != nil {
		t.Fatal(err)
	}
}

// Fit keeps a report that fits as it is, and otherwise cuts the failures
// (their start kept) and the verify output (its end kept) to the largest
// share that fits, measured on the JSON, never the ids, outcomes or commits.
func TestWaveReportFit(t *testing.T) {
	small := report("boom", "FAIL x")
	if got, err := small.Fit(small.Size()); err != nil || got.Size() != small.Size() || got.Tasks[1].Failure != "boom" {
		t.Fatalf("a fitting report changed: %+v, %v", got, err)
	}
	failure := "START " + strings.Repeat("f", 5000)
	out := strings.Repeat("o", 20000) + " THE END"
	big := report(failure, out)
	for _, limit := range []int{16384, 8000, 2000, 600} {
		got, err := big.Fit(limit)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		size := got.Size()
		if size > limit || size < limit-20 {
			t.Errorf("limit %d: fitted report is %d characters, want at most the limit and within 20 of it", limit, size)
		}
		if got.Tasks[0].MergeCommit != big.Tasks[0].MergeCommit || got.Tasks[2].Outcome != "failed" || got.Tasks[1].ID != "b" {
			t.Errorf("limit %d: the tasks' names changed: %+v", limit, got.Tasks)
		}
		if f := got.Tasks[1].Failure; f != "" && (!strings.HasPrefix(f, "START") || !strings.HasSuffix(f, cutMark)) {
			t.Errorf("limit %d: failure cut %q, want its start kept", limit, f)
		}
		if v := got.Verify.OutputTail; limit > 1000 && (!strings.HasSuffix(v, "THE END") || !strings.HasPrefix(v, cutMark)) {
			t.Errorf("limit %d: verify tail %q…, want its end kept", limit, v[:20])
		}
		if big.Tasks[1].Failure != failure || big.Verify.OutputTail != out {
			t.Fatal("Fit changed the report it was given")
		}
	}
	// Summary and rejection go last; names never.
	long := report(failure, out)
	long.Summary, long.Rejected = strings.Repeat("s", 3000), strings.Repeat("r", 3000)
	got, err := long.Fit(500)
	if err != nil || got.Size() > 500 || got.Tasks[1].Failure != "" || !strings.HasPrefix(got.Summary, "sss") {
		t.Fatalf("fit to 500: %v, %d, %+v", err, got.Size(), got)
	}
	var re *RuleError
	if _, err := long.Fit(100); !errors.As(err, &re) || re.Rule != RuleWaveReportCap || !strings.Contains(err.Error(), "limit is 100") {
		t.Fatalf("an impossible fit: %v", err)
	}
	if _, err := (WaveReport{}).Fit(100); !errors.As(err, &re) || re.Rule != RuleWaveReport {
		t.Fatalf("an invalid report was fitted: %v", err)
	}
}

func TestWaveReportSizeCountsCodePoints(t *testing.T) {
	r := WaveReport{Wave: 1, Summary: strings.Repeat("é<", 10)}
	if n := r.Size(); n != utf8.RuneCountInString(`{"wave":1,"summary":"`+r.Summary+`","tasks":null}`) {
		t.Fatalf("size %d", n)
	}
}

func TestWaveReportRender(t *testing.T) {
	r := report("go test failed:\nFAIL pkg", "--- FAIL: TestX\nFAIL")
	r.Rejected = "Split b in two."
	text := r.Render()
	for _, want := range []string{
		"Wave 2's plan: Three tasks.",
		"- a: merged (merge commit " + strings.Repeat("a", 40) + ")",
		"- b: failed; failure: go test failed:\n  FAIL pkg",
		"the verify command `make test` failed on the integration head " + strings.Repeat("f", 40) + " (exit code 2)",
		"```\n--- FAIL: TestX\nFAIL\n```",
		"A person rejected the last plan: Split b in two.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("render lacks %q:\n%s", want, text)
		}
	}
	if empty := (WaveReport{Wave: 1}).Render(); !strings.Contains(empty, "(no summary)") || !strings.Contains(empty, "It ran no task.") {
		t.Errorf("empty report:\n%s", empty)
	}
}

// A wave too large for even its tasks' names lists those that did not merge
// first and counts the rest; the next planner is told.
func TestWaveReportFitOmitsMergedTasksFirst(t *testing.T) {
	r := WaveReport{Wave: 4, Summary: strings.Repeat("s", 1500), Verify: &HeadVerify{Command: "make", Head: "h", OutputTail: strings.Repeat("o", 9000) + "END"}}
	for i := range 1000 {
		o := TaskOutcome{ID: fmt.Sprintf("task-%d", i), Outcome: OutcomeMerged, MergeCommit: strings.Repeat("c", 40)}
		if i%100 == 7 {
			o = TaskOutcome{ID: fmt.Sprintf("task-%d", i), Outcome: "failed", Failure: strings.Repeat("f", 3000)}
		}
		r.Tasks = append(r.Tasks, o)
	}
	got, err := r.Fit(16384)
	if err != nil {
		t.Fatal(err)
	}
	if size := got.Size(); size > 16384 || size < 16000 {
		t.Fatalf("fitted to %d characters", size)
	}
	failed := 0
	for _, task := range got.Tasks {
		if task.Outcome == "failed" {
			failed++
		}
	}
	if failed != 10 || got.Omitted != 1000-len(got.Tasks) || got.Omitted == 0 || !strings.HasSuffix(got.Verify.OutputTail, "END") {
		t.Fatalf("kept %d tasks (%d failed), omitted %d", len(got.Tasks), failed, got.Omitted)
	}
	if text := got.Render(); !strings.Contains(text, fmt.Sprintf("(%d more tasks are not listed", got.Omitted)) {
		t.Fatalf("render does not say tasks were left out:\n%s", text[:300])
	}
}

func TestHeadAndTailCountRunes(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{head("héllo", 5), "héllo"}, {head("héllo", 6), "héllo"}, {head("héllo", 3), "hé…"}, {head("héllo", 1), "…"},
		{tail("héllo", 5), "héllo"}, {tail("héllo", 3), "…lo"}, {tail("éé", 1), "…"}, {head("x", 0), ""}, {tail("x", 0), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
