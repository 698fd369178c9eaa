package fakeopenai

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PlanTask is one task of submit_plan's arguments (nil dependsOn is sent
// as []).
type PlanTask struct {
	ID        string   `json:"id"`
	Objective string   `json:"objective"`
	DependsOn []string `json:"dependsOn"`
}

// PlanArgs are submit_plan's arguments (nil lists are sent as []).
type PlanArgs struct {
	Status   string     `json:"status"`
	Summary  string     `json:"summary"`
	Tasks    []PlanTask `json:"tasks"`
	Evidence []string   `json:"evidence"`
	Blocker  string     `json:"blocker"`
}

// SubmitPlan is a submit_plan call.
func SubmitPlan(p PlanArgs) Call {
	if p.Tasks == nil {
		p.Tasks = []PlanTask{}
	}
	for i := range p.Tasks {
		if p.Tasks[i].DependsOn == nil {
			p.Tasks[i].DependsOn = []string{}
		}
	}
	if p.Evidence == nil {
		p.Evidence = []string{}
	}
	return CallJSON("submit_plan", p)
}

// IsPlanner reports whether the request comes from a campaign wave's
// planner session (it offers submit_plan).
func (r Request) IsPlanner() bool { return r.OfferedTool("submit_plan") != "" }

// wavePattern finds the line a planner's prompt opens with.
var wavePattern = regexp.MustCompile(`Planning wave (\d+) of the campaign`)

// Wave is the wave a planner request plans (0: not a planner's).
func (r Request) Wave() int {
	if m := wavePattern.FindStringSubmatch(r.Prompt()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// PlannerObjective is the campaign's objective in a planner's prompt.
func (r Request) PlannerObjective() string {
	_, after, ok := strings.Cut(r.Prompt(), "The campaign's objective:\n")
	if !ok {
		return ""
	}
	objective, _, _ := strings.Cut(after, "\n\nThe checkout is")
	return objective
}

// Planner scripts a planner session (demos and real-stack tests): each
// wave's planner looks at the checkout (list_files, then each of Look's
// commands, read-only) and submits what Plan answers for its wave and the
// request (say, the output of its last command). Rule is a Script's Rule
// for the planner's requests; other requests go to Else.
type Planner struct {
	Look []string
	Plan func(wave int, req Request) PlanArgs
	Else func(Request) Response
}

// Rule answers one request of the script.
func (p Planner) Rule(req Request) Response {
	if !req.IsPlanner() {
		return p.Else(req)
	}
	steps := append([]Call{CallJSON("list_files", map[string]string{})}, shellCalls(p.Look)...)
	if step := req.Step(); step < len(steps) && len(req.Chat.Tools) > 1 {
		return Response{Reasoning: "Look at the integration head before planning.", ToolCalls: []Call{steps[step]}}
	}
	return Response{Reasoning: "Submit the wave's plan.", ToolCalls: []Call{SubmitPlan(p.Plan(req.Wave(), req))}}
}

func shellCalls(commands []string) []Call {
	out := make([]Call, len(commands))
	for i, c := range commands {
		out[i] = CallJSON("run_command", map[string]any{"command": c, "timeout_seconds": 30})
	}
	return out
}

// The planning demo (`make demo-plan`): an objective
//
//	In lines.txt, add the lines "alpha", "beta" and "gamma" after the first line.
//
// is planned as one campaign demo task per line (demo_campaign.go plays
// each), the second depending on the first; a later wave's planner reads
// the file and reports complete when every line is there, else plans the
// missing lines again under new ids.
var demoPlanPattern = regexp.MustCompile(`In (\S+), add the lines ((?:"[^"]+"(?:, | and )?)+) after the first line`)

var quoted = regexp.MustCompile(`"([^"]+)"`)

// DemoPlanObjective is the planning demo's objective for file and lines.
func DemoPlanObjective(file string, lines ...string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = strconv.Quote(l)
	}
	list := strings.Join(q, ", ")
	if n := len(q); n > 1 {
		list = strings.Join(q[:n-1], ", ") + " and " + q[n-1]
	}
	return fmt.Sprintf("In %s, add the lines %s after the first line.", file, list)
}

// DemoPlanner is the demo's planner: it reads the file the objective names
// and plans what is missing (Look runs "cat" on it).
func DemoPlanner(req Request) Response {
	m := demoPlanPattern.FindStringSubmatch(req.PlannerObjective())
	if m == nil {
		return Tools(SubmitPlan(PlanArgs{Status: "blocked", Summary: "The objective is not one the demo planner knows.",
			Blocker: "The demo planner plans only objectives like " + DemoPlanObjective("lines.txt", "alpha", "beta") + "."}))
	}
	file := m[1]
	p := Planner{Look: []string{"cat -- " + file + " 2>&1 || true"}, Plan: func(wave int, req Request) PlanArgs {
		return demoPlan(wave, file, quoted.FindAllStringSubmatch(m[2], -1), req.LastToolOutput())
	}}
	return p.Rule(req)
}

func demoPlan(wave int, file string, lines [][]string, shown string) PlanArgs {
	var missing, present []string
	for _, l := range lines {
		if strings.Contains(shown, "\n"+l[1]+"\n") || strings.Contains(shown, "\n"+l[1]) {
			present = append(present, l[1])
		} else {
			missing = append(missing, l[1])
		}
	}
	if len(missing) == 0 {
		ev := make([]string, len(present))
		for i, l := range present {
			ev[i] = fmt.Sprintf("cat %s shows the line %q on the integration head", file, l)
		}
		return PlanArgs{Status: "complete", Summary: fmt.Sprintf("%s holds every line the objective asks for.", file), Evidence: ev}
	}
	var tasks []PlanTask
	for i, l := range missing {
		id := fmt.Sprintf("w%d-line-%d", wave, i+1)
		t := PlanTask{ID: id, Objective: fmt.Sprintf("In %s, add the line %q after the first line.", file, l)}
		if i == 1 {
			t.DependsOn = []string{tasks[0].ID} // the demo's dependency: the second waits for the first
		}
		tasks = append(tasks, t)
	}
	return PlanArgs{Status: "tasks", Summary: fmt.Sprintf("One task per missing line of %s: %s.", file, strings.Join(missing, ", ")), Tasks: tasks}
}
