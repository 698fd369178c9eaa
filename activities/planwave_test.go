package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

var planLine = activities.CampaignLine{Campaign: "camp", Branch: "integration", Base: "main"}

// planFixture is a local-mode worker (real bubblewrap) whose campaign
// repository's main branch holds files; it returns main's commit.
func planFixture(t *testing.T, script fakeopenai.Script, files map[string]string) (*fixture, string) {
	t.Helper()
	f := newFixture(t, script, context.Background(), func(c *activities.Config) {
		c.Git.Mode, c.Sandbox.Mode = gitws.ModeLocal, sandbox.ModeBwrap
		c.PlanModel = "planner-model"
	})
	bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "integration.git")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	gitSetup(t, bare, "init", "-q", "--bare")
	src := t.TempDir()
	gitSetup(t, src, "init", "-q", "-b", "main")
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitSetup(t, src, "add", "-A")
	gitSetup(t, src, "commit", "-q", "-m", "the project")
	gitSetup(t, src, "push", "-q", bare, "main")
	return f, gitSetup(t, src, "rev-parse", "HEAD")
}

func (f *fixture) planWave(in activities.PlanWaveInput) (activities.PlanWaveOutput, error) {
	f.t.Helper()
	val, err := f.env.ExecuteActivity(activities.PlanWaveName, in)
	if err != nil {
		return activities.PlanWaveOutput{}, err
	}
	var out activities.PlanWaveOutput
	if err := val.Get(&out); err != nil {
		f.t.Fatalf("decode output: %v", err)
	}
	return out, nil
}

// A wave's planner on a real repository: it sees the integration head
// checked out (cat shows the file), cannot write it (its command fails on
// the read-only mount and the repository is unchanged), its cyclic plan
// goes back with the rule, its valid plan is returned with who planned and
// what it spent, its transcript is written, and its scratch checkout is
// gone afterwards.
func TestPlanWaveOnAReadOnlyCheckout(t *testing.T) {
	cycle := fakeopenai.PlanArgs{Status: "tasks", Summary: "Two tasks.", Tasks: []fakeopenai.PlanTask{
		{ID: "alpha", Objective: "Add alpha.", DependsOn: []string{"beta"}}, {ID: "beta", Objective: "Add beta.", DependsOn: []string{"alpha"}}}}
	good := fakeopenai.PlanArgs{Status: "tasks", Summary: "Alpha, then beta.", Tasks: []fakeopenai.PlanTask{
		{ID: "alpha", Objective: "In lines.txt, add the line \"alpha\" after the first line."},
		{ID: "beta", Objective: "In lines.txt, add the line \"beta\" after the first line.", DependsOn: []string{"alpha", "old"}}}}
	f, main := planFixture(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		fakeopenai.Tools(fakeopenai.CallJSON("run_command", map[string]string{"command": "echo planned > lines.txt; echo new > new.txt; git commit -qam x"})),
		fakeopenai.Tools(fakeopenai.CallJSON("run_command", map[string]string{"command": "cat lines.txt; ls"})),
		fakeopenai.Tools(fakeopenai.SubmitPlan(cycle)),
		fakeopenai.Tools(fakeopenai.SubmitPlan(good)),
	}}, map[string]string{"lines.txt": "Greetings\n", "check.sh": "grep -q alpha lines.txt\n"})
	out, err := f.planWave(activities.PlanWaveInput{Line: planLine, Wave: 2, Objective: "Add alpha and beta to lines.txt.", Head: main,
		Report:          &plan.WaveReport{Wave: 1, Summary: "One task.", Tasks: []plan.TaskOutcome{{ID: "old", Outcome: "merged", MergeCommit: main}}},
		Rules:           plan.Rules{MaxTasks: 5, KnownIDs: []string{"old"}, MergedIDs: []string{"old"}},
		MaxHandoffChars: 16384})
	if err != nil {
		t.Fatal(err)
	}
	if out.Plan.Status != plan.StatusTasks || len(out.Plan.Tasks) != 2 || !slices.Equal(out.Plan.Tasks[1].DependsOn, []string{"alpha", "old"}) ||
		out.Provider != "builtin" || out.Model != "planner-model" || out.Usage.ModelCalls != 4 || out.SessionID == "" {
		t.Fatalf("output %+v", out)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if r.Chat.Model != "planner-model" || !slices.Equal(toolsOf(r), []string{"list_files", "read_file", "search_files", "run_command", "submit_plan"}) {
			t.Fatalf("request to %q offering %q", r.Chat.Model, toolsOf(r))
		}
	}
	prompt := reqs[0].Prompt()
	for _, frag := range []string{"Planning wave 2", "at its head " + main, "- old: merged (merge commit " + main + ")", "at most 5 tasks"} {
		if !strings.Contains(prompt, frag) {
			t.Errorf("prompt lacks %q", frag)
		}
	}
	if got := reqs[1].LastToolOutput(); !strings.Contains(got, "Read-only file system") {
		t.Errorf("the planner's write did not fail: %q", got)
	}
	if got := reqs[2].LastToolOutput(); !strings.Contains(got, "Greetings") || !strings.Contains(got, "check.sh") || strings.Contains(got, "new.txt") || strings.Contains(got, "planned") {
		t.Errorf("the planner saw %q, want the head's files unchanged", got)
	}
	if got := reqs[3].LastToolOutput(); !strings.Contains(got, `plan rejected: rule "no cycle": dependsOn has a cycle: alpha -> beta -> alpha`) {
		t.Errorf("the cyclic plan's answer: %q", got)
	}
	bare := filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "integration.git")
	if head := gitSetup(t, bare, "rev-parse", "refs/heads/integration"); head != main {
		t.Errorf("the integration branch is at %s, want %s (created from main, nothing else)", head, main)
	}
	if _, err := os.Lstat(filepath.Join(f.cfg.WorkspaceRoot, "campaigns", "camp", "plan-2")); !os.IsNotExist(err) {
		t.Errorf("the planner's scratch checkout is still there (%v)", err)
	}
	files := f.transcripts("campaigns/camp/plan-2")
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), "plan-2-attempt-1-"+out.SessionID) {
		t.Fatalf("transcripts %q", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var end struct {
		Kind string     `json:"kind"`
		Plan *plan.Plan `json:"plan"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Kind != "session_end" || end.Plan == nil || end.Plan.Summary != good.Summary {
		t.Fatalf("the transcript's last line %s (%v)", lines[len(lines)-1], err)
	}
}

// The demo's scripted planner on the real activity: the first wave plans
// one task per line (the second depending on the first), a wave whose head
// holds every line reports complete with evidence; with no Head given, the
// integration line's head is planned on.
func TestPlanWaveDemoPlanner(t *testing.T) {
	objective := fakeopenai.DemoPlanObjective("lines.txt", "alpha", "beta", "gamma")
	f, _ := planFixture(t, fakeopenai.DemoScript(), map[string]string{"lines.txt": "Greetings\n"})
	out, err := f.planWave(activities.PlanWaveInput{Line: planLine, Wave: 1, Objective: objective, MaxHandoffChars: 16384})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range out.Plan.Tasks {
		ids = append(ids, task.ID)
	}
	if out.Plan.Status != plan.StatusTasks || !slices.Equal(ids, []string{"w1-line-1", "w1-line-2", "w1-line-3"}) ||
		!slices.Equal(out.Plan.Tasks[1].DependsOn, []string{"w1-line-1"}) || out.Plan.Tasks[2].Objective != `In lines.txt, add the line "gamma" after the first line.` {
		t.Fatalf("first wave's plan %+v", out.Plan)
	}

	f, main := planFixture(t, fakeopenai.DemoScript(), map[string]string{"lines.txt": "Greetings\nalpha\nbeta\ngamma\n"})
	out, err = f.planWave(activities.PlanWaveInput{Line: planLine, Wave: 2, Objective: objective, Head: main, MaxHandoffChars: 16384,
		Rules: plan.Rules{KnownIDs: ids, MergedIDs: ids}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Plan.Status != plan.StatusComplete || len(out.Plan.Evidence) != 3 || len(out.Plan.Tasks) != 0 {
		t.Fatalf("second wave's plan %+v", out.Plan)
	}
}

// Input the activity cannot act on fails at once, non-retryable, naming
// what is wrong.
func TestPlanWaveBadInput(t *testing.T) {
	f, _ := planFixture(t, fakeopenai.Script{}, map[string]string{"a": "a"})
	for want, in := range map[string]activities.PlanWaveInput{
		"wave 0 is out of range":       {Line: planLine, Wave: 0, Objective: "o", MaxHandoffChars: 100},
		"objective is empty":           {Line: planLine, Wave: 1, MaxHandoffChars: 100},
		"is not one path segment":      {Line: activities.CampaignLine{Campaign: "../x", Branch: "b"}, Wave: 1, Objective: "o", MaxHandoffChars: 100},
		"maxHandoffChars must be":      {Line: planLine, Wave: 1, Objective: "o"},
		"the last wave's report: rule": {Line: planLine, Wave: 1, Objective: "o", MaxHandoffChars: 100, Report: &plan.WaveReport{}},
	} {
		_, err := f.planWave(in)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() || appErr.Type() != activities.ErrTypeBadRoundInput || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", want, err)
		}
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Fatalf("%d model requests for bad input", n)
	}
}
