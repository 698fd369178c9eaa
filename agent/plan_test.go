package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/plan"
)

const campaignObjective = "Add a greeting in three languages to lines.txt."

func planHarness(t *testing.T, script fakeopenai.Script) *harness {
	h := newHarness(t, script)
	h.req.Objective = campaignObjective
	h.req.Round, h.req.MaxRounds = 2, 2
	h.req.Plan = &agent.PlanSubject{Wave: 2, Head: strings.Repeat("c", 40),
		Report: &plan.WaveReport{Wave: 1, Summary: "Two tasks.", Tasks: []plan.TaskOutcome{
			{ID: "hello", Outcome: "merged", MergeCommit: strings.Repeat("a", 40)},
			{ID: "bonjour", Outcome: "failed", Failure: "the verify command `bash check.sh` failed (exit 1)"},
		}},
		Rejected: "Keep each task to one line.",
		Rules:    plan.Rules{MaxTasks: 3, KnownIDs: []string{"hello", "bonjour"}, MergedIDs: []string{"hello"}},
	}
	return h
}

var goodPlan = fakeopenai.PlanArgs{Status: "tasks", Summary: "Retry bonjour under a new id, then hola.", Tasks: []fakeopenai.PlanTask{
	{ID: "bonjour-2", Objective: "In lines.txt, add the line \"Bonjour\" after the first line.", DependsOn: []string{"hello"}},
	{ID: "hola", Objective: "In lines.txt, add the line \"Hola\" after the first line.", DependsOn: []string{"bonjour-2"}},
}}

// The planner is offered the read tools, run_command and submit_plan only;
// its prompt holds the objective, the wave, the last wave's report, the
// rejection and the rules; each invalid plan goes back with the rule it
// broke, and the valid one ends the session as Result.Plan. Its command's
// write is undone (no bubblewrap here: every path is protected).
func TestPlannerRejectsInvalidPlansWithTheRule(t *testing.T) {
	cycle := goodPlan
	cycle.Tasks = []fakeopenai.PlanTask{{ID: "a", Objective: "A.", DependsOn: []string{"b"}}, {ID: "b", Objective: "B.", DependsOn: []string{"a"}}}
	reused := goodPlan
	reused.Tasks = []fakeopenai.PlanTask{{ID: "bonjour", Objective: "Again."}}
	h := planHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]string{"command": "echo x > new.txt; echo y >> lines.txt"}),
		call("write_file", map[string]string{"path": "x.txt", "content": "x"}),
		fakeopenai.Tools(fakeopenai.SubmitPlan(cycle)),
		fakeopenai.Tools(fakeopenai.SubmitPlan(reused)),
		fakeopenai.Tools(fakeopenai.CallJSON("submit_plan", map[string]any{"status": "tasks", "summary": "s", "tasks": []any{map[string]any{"id": "x", "objective": "y", "verifyCommand": "true"}}, "evidence": []string{}, "blocker": ""})),
		fakeopenai.Tools(fakeopenai.SubmitPlan(goodPlan)),
	}})
	testkit.WriteFiles(t, h.req.Workspace, map[string]string{"lines.txt": "Greetings\n"})
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan == nil || res.Plan.Status != plan.StatusTasks || len(res.Plan.Tasks) != 2 || res.Plan.Tasks[1].DependsOn[0] != "bonjour-2" {
		t.Fatalf("Plan = %+v", res.Plan)
	}
	reqs := h.requests()
	for _, r := range reqs {
		if got, want := offeredTools(r), []string{"list_files", "read_file", "search_files", "run_command", "submit_plan"}; !slices.Equal(got, want) {
			t.Fatalf("request %d offers %q, want %q", r.Index, got, want)
		}
	}
	prompt := reqs[0].Prompt()
	for _, frag := range []string{campaignObjective, "Planning wave 2 of the campaign", "at its head " + strings.Repeat("c", 40),
		"- hello: merged (merge commit " + strings.Repeat("a", 40) + ")", "- bonjour: failed; failure: the verify command",
		"A person rejected this wave's last plan, saying:\nKeep each task to one line.", "at most 3 tasks",
		"ids already used by the campaign (choose others): hello, bonjour", "merged tasks a task may depend on: hello",
		"The checkout is read-only for you", "independently mergeable"} {
		if !strings.Contains(prompt, frag) {
			t.Errorf("planner prompt lacks %q", frag)
		}
	}
	if got := lastMessage(reqs[2]).Content; !strings.Contains(got, `unknown tool "write_file"`) {
		t.Errorf("write_file answer = %q", got)
	}
	for i, frag := range map[int]string{
		3: `plan rejected: rule "no cycle": dependsOn has a cycle: a -> b -> a`,
		4: `plan rejected: rule "unique id": tasks[0]: id "bonjour" is already used by a task of the campaign`,
		5: `plan rejected: tasks[0] has the unknown key "verifyCommand"`,
	} {
		if got := lastMessage(reqs[i]).Content; !strings.Contains(got, frag) || !strings.Contains(got, "call submit_plan again") {
			t.Errorf("request %d answer %q lacks %q", i, got, frag)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(h.req.Workspace, "lines.txt")); string(data) != "Greetings\n" {
		t.Errorf("lines.txt = %q: the planner's write survived", data)
	}
	for _, name := range []string{"new.txt", "x.txt"} {
		if _, err := os.Stat(filepath.Join(h.req.Workspace, name)); err == nil {
			t.Errorf("the planner created %s", name)
		}
	}
	ends := h.events.ofKind(agent.EventSessionEnd)
	end := ends[len(ends)-1]
	if end.Kind != agent.EventSessionEnd || end.Plan == nil || end.Plan.Summary != goodPlan.Summary || end.Report != nil {
		t.Fatalf("session_end = %+v", end)
	}
}

// submit_plan's schema is generated from its parameters: five required
// keys, the status enum, tasks of id, objective and dependsOn.
func TestSubmitPlanSchema(t *testing.T) {
	h := planHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{fakeopenai.Tools(fakeopenai.SubmitPlan(goodPlan))}})
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Enum  []string `json:"enum"`
			Items struct {
				Required []string `json:"required"`
			} `json:"items"`
		} `json:"properties"`
	}
	tools := h.requests()[0].Chat.Tools
	raw, _ := json.Marshal(tools[len(tools)-1].Function.Parameters)
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(schema.Required, []string{"status", "summary", "tasks", "evidence", "blocker"}) ||
		!slices.Equal(schema.Properties["status"].Enum, []string{"tasks", "complete", "blocked"}) ||
		!slices.Equal(schema.Properties["tasks"].Items.Required, []string{"id", "objective", "dependsOn"}) {
		t.Fatalf("schema %s", raw)
	}
}

// A planner that runs out of model calls is asked to submit (only
// submit_plan offered, the hand-off notice saying so), and its plan then
// is accepted; a planner that never submits fails like a round.
func TestPlannerForcedHandoff(t *testing.T) {
	h := planHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Chat.Tools) == 1 {
			return fakeopenai.Tools(fakeopenai.SubmitPlan(fakeopenai.PlanArgs{Status: "blocked", Summary: "Out of calls.", Blocker: "Needs a person."}))
		}
		return call("run_command", map[string]any{"command": fmt.Sprintf("echo look %d", r.Index)})
	}})
	h.cfg.MaxModelCalls = 3
	res, err := h.run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan == nil || res.Plan.Status != plan.StatusBlocked || res.ForcedBound == "" {
		t.Fatalf("Plan = %+v, forced %q", res.Plan, res.ForcedBound)
	}
	reqs := h.requests()
	last := reqs[len(reqs)-1]
	if len(reqs) != 3 || !slices.Equal(offeredTools(last), []string{"submit_plan"}) {
		t.Fatalf("%d requests, the last offering %q", len(reqs), offeredTools(last))
	}
	if got := lastMessage(last).Content; !strings.Contains(got, "Submit your plan now") || !strings.Contains(got, "Only submit_plan is available") {
		t.Fatalf("hand-off notice %q", got)
	}

	h = planHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("Plans are hard.") }})
	_, err = h.run()
	wantChildFailure(t, err, "answered with text")
	reqs = h.requests()
	if got := lastMessage(reqs[len(reqs)-1]).Content; !strings.Contains(got, "Only submit_plan is available now") {
		t.Fatalf("final reminder = %q", got)
	}
}

// A plan never valid ends the session after the repairs, naming the rule.
func TestPlannerRepairsSpent(t *testing.T) {
	h := planHarness(t, fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Tools(fakeopenai.SubmitPlan(fakeopenai.PlanArgs{Status: "complete", Summary: "Done, trust me."}))
	}})
	_, err := h.run()
	wantChildFailure(t, err, `rule "evidence"`)
	if n := len(h.requests()); n != 4 {
		t.Fatalf("%d requests, want 4 (three repairs)", n)
	}
}

// A planned campaign's task round shows the campaign's objective under its
// own heading, after the task's own; a round outside a campaign shows none.
func TestRoundPromptNamesTheCampaignObjective(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	h.req.CampaignObjective = campaignObjective
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	prompt := h.requests()[0].Prompt()
	want := "Objective:\n" + objective + "\n\n## The campaign's objective (context)\n"
	if !strings.Contains(prompt, want) || !strings.Contains(prompt, "Do your own objective above, not the whole campaign's") ||
		!strings.Contains(prompt, "\n"+campaignObjective+"\n") {
		t.Fatalf("prompt:\n%s", prompt)
	}
	plain := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	if _, err := plain.run(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.requests()[0].Prompt(), "campaign") {
		t.Fatal("a round outside a campaign mentions one")
	}
}
