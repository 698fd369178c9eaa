package starterapp

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// wantTasks is the list every format below describes.
const wantTasks = `[{"id":"api","objective":"Add the endpoint"},` +
	`{"id":"docs","objective":"Document it","dependsOn":["api"],"verifyCommand":"make docs","maxRounds":4}]`

func TestTaskFileFormats(t *testing.T) {
	tests := []struct {
		name, file, content string
		want                string // the CampaignInput as JSON
	}{
		{"json array", "tasks.json", `[
  {"id": "api", "objective": "Add the endpoint"},
  {"id": "docs", "objective": "Document it", "dependsOn": ["api"], "verifyCommand": "make docs", "maxRounds": 4}
]`, `{"tasks":` + wantTasks + `}`},
		{"json object", "tasks.json", `{"maxParallel": 3, "branch": "feature", "approve": "merge", "mergeBatch": 2,
  "tasks": [{"id": "api", "objective": "Add the endpoint"},
            {"id": "docs", "objective": "Document it", "dependsOn": ["api"], "verifyCommand": "make docs", "maxRounds": 4}]}`,
			`{"tasks":` + wantTasks + `,"branch":"feature","maxParallel":3,"mergeBatch":2,"approve":"merge"}`},
		{"yaml array", "tasks.yaml", `- id: api
  objective: Add the endpoint
- id: docs
  objective: Document it
  dependsOn: [api]
  verifyCommand: make docs
  maxRounds: 4
`, `{"tasks":` + wantTasks + `}`},
		{"yaml object", "plan.yml", `base: main
verifyCommand: go test ./...
maxMergeAttempts: 2
maxTokens: 100000
maxMinutes: 90
tasks:
  - id: api
    objective: Add the endpoint
  - id: docs
    objective: Document it
    dependsOn:
      - api
    verifyCommand: make docs
    maxRounds: 4
`, `{"tasks":` + wantTasks + `,"base":"main","verifyCommand":"go test ./...","maxMergeAttempts":2,"maxTokens":100000,"maxMinutes":90}`},
		{"markdown", "TODO.md", `# Plan

Some prose that is ignored.

- [x] setup: done already
- [ ] api: Add the endpoint
  a note under the item, ignored
- [ ] docs: Document it
  after: api, setup
* [X] old: also done
  after: api

- not a task
`, `{"tasks":[{"id":"api","objective":"Add the endpoint"},{"id":"docs","objective":"Document it","dependsOn":["api"]}]}`},
		{"sniffed json", "tasks", `[{"id": "a", "objective": "x"}]`, `{"tasks":[{"id":"a","objective":"x"}]}`},
		{"sniffed markdown", "tasks.txt", "- [ ] a: x\n", `{"tasks":[{"id":"a","objective":"x"}]}`},
		{"sniffed yaml", "tasks", "- id: a\n  objective: x\n", `{"tasks":[{"id":"a","objective":"x"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := readTaskFile(tt.file, []byte(tt.content), true)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(in)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTaskFileErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		withinFile          bool
		want                string
	}{
		{"json syntax", "t.json", "[\n  {\"id\": \"a\",\n  \"objective\": }\n]", true, "t.json:3: invalid JSON"},
		{"json not a list", "t.json", `"tasks"`, true, `t.json:1: want a list of tasks, or an object with "tasks"`},
		{"yaml syntax", "t.yaml", "- id: a\n objective: [x\n", true, "t.yaml: invalid YAML: line"},
		{"empty", "t.yaml", "", true, `t.yaml: is empty`},
		{"no tasks key", "t.yaml", "branch: x\n", true, `t.yaml:1: the object has no "tasks" list`},
		{"tasks not a list", "t.yaml", "tasks: a\n", true, `t.yaml:1: "tasks" must be a list of tasks`},
		{"empty list", "t.json", `{"tasks": []}`, true, "t.json:1: the task list is empty"},
		{"unknown campaign field", "t.yaml", "tasks:\n  - {id: a, objective: x}\nparallel: 3\n", true,
			`t.yaml:3: unknown campaign field "parallel" (want tasks, base,`},
		{"unknown task field", "t.yaml", "- id: a\n  objective: x\n  after: [b]\n", true,
			`t.yaml:3: unknown field of task 1 "after" (want id, objective, dependsOn, verifyCommand, maxRounds, protectedPaths)`},
		{"task not an object", "t.yaml", "- a\n", true, "t.yaml:1: task 1 must be an object with id and objective"},
		{"string field a number", "t.yaml", "- id: 7\n  objective: x\n", true, `t.yaml:1: "id" must be a string`},
		{"count a string", "t.yaml", "maxParallel: three\ntasks:\n  - {id: a, objective: x}\n", true, `t.yaml:1: "maxParallel" must be a positive whole number, got "three"`},
		{"count zero", "t.json", "[{\"id\": \"a\", \"objective\": \"x\",\n \"maxRounds\": 0}]", true, `t.json:2: "maxRounds" must be a positive whole number, got "0"`},
		{"dependsOn not a list", "t.yaml", "- id: a\n  objective: x\n  dependsOn: b\n", true, `t.yaml:3: "dependsOn" must be a list of task ids`},
		{"bad id", "t.yaml", "- id: a\n  objective: x\n- id: Bad_Id\n  objective: y\n", true, `t.yaml:3: task id "Bad_Id" must be lower-case letters`},
		{"missing id", "t.yaml", "- objective: x\n", true, `t.yaml:1: task id "" must be`},
		{"duplicate id", "t.yaml", "- {id: a, objective: x}\n- {id: a, objective: y}\n", true, `t.yaml:2: task id "a" is already used at line 1`},
		{"no objective", "t.yaml", "- id: a\n  objective: '  '\n", true, `t.yaml:1: task "a" has no objective`},
		{"unknown dependency", "t.yaml", "- {id: a, objective: x, dependsOn: [b]}\n", true, `t.yaml:1: task "a" depends on "b", which is not a task of the file`},
		{"self dependency", "t.yaml", "- {id: a, objective: x, dependsOn: [a]}\n", false, `t.yaml:1: task "a" depends on itself`},
		{"md item without id", "t.md", "- [ ] a: x\n- [ ] Write the docs\n", true, `t.md:2: a task item is "- [ ] id: objective", got "- [ ] Write the docs"`},
		{"md no items", "t.md", "# Plan\n- [x] a: done\n", true, `t.md: has no unchecked task item`},
		{"md second after", "t.md", "- [ ] a: x\n- [ ] b: y\n  after: a\n  after: a\n", true, `t.md:4: task "b" has a second "after:" line`},
		{"md empty dependency", "t.md", "- [ ] a: x\n- [ ] b: y\n  after: a,\n", true, `t.md:3: "after:" of task "b" has an empty dependency`},
		{"md unknown dependency", "t.md", "- [ ] a: x\n  after: z\n", true, `t.md:1: task "a" depends on "z", which is not a task of the file`},
		{"md bad id", "t.md", "- [ ] A task: x\n", true, `t.md:1: task id "A task" must be lower-case`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readTaskFile(tt.file, []byte(tt.content), tt.withinFile)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// add-tasks may name a task the campaign already has.
func TestAddTasksDependsOnCampaignTasks(t *testing.T) {
	in, err := readTaskFile("more.md", []byte("- [ ] c: x\n  after: a\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Tasks) != 1 || len(in.Tasks[0].DependsOn) != 1 || in.Tasks[0].DependsOn[0] != "a" {
		t.Errorf("tasks = %+v", in.Tasks)
	}
}

func TestParseCampaignCommands(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	md := write("my plan.md", "- [ ] a: x\n- [ ] b: y\n  after: a\n")
	obj := write("obj.yaml", "maxParallel: 5\nbranch: from-file\nverifyCommand: make check\ntasks:\n  - {id: a, objective: x}\n")
	more := write("more.json", `[{"id": "c", "objective": "z", "dependsOn": ["a"]}]`)

	parse := func(args ...string) (command, error) {
		return parseArgs(args, config.MapEnv{}, nil, io.Discard)
	}
	cmd, err := parse("campaign", "--tasks", md)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.workflowID != "campaign-my-plan" || len(cmd.campaign.Tasks) != 2 || cmd.campaign.Tasks[1].DependsOn[0] != "a" {
		t.Errorf("campaign from %s: id %q, input %+v", md, cmd.workflowID, cmd.campaign)
	}
	// Flags win over the file's fields; the rest of the file stays.
	cmd, err = parse("campaign", "--tasks", obj, "--id", "feat-1", "--parallel", "3", "--batch", "2", "--max-merge-attempts", "4",
		"--approve", "merge", "--base", "dev", "--max-tokens", "9000", "--max-minutes", "60", "--json")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cmd.campaign)
	want := `{"tasks":[{"id":"a","objective":"x"}],"base":"dev","branch":"from-file","maxParallel":3,"verifyCommand":"make check",` +
		`"maxMergeAttempts":4,"mergeBatch":2,"approve":"merge","maxTokens":9000,"maxMinutes":60}`
	if cmd.workflowID != "feat-1" || string(got) != want || !cmd.jsonOut {
		t.Errorf("id %q, input\n got %s\nwant %s", cmd.workflowID, got, want)
	}
	cmd, err = parse("campaign", "--tasks", obj, "--verify", "go test ./...", "--branch", "mine")
	if err != nil {
		t.Fatal(err)
	}
	if cmd.campaign.VerifyCommand != "go test ./..." || cmd.campaign.Branch != "mine" || *cmd.campaign.MaxParallel != 5 {
		t.Errorf("input = %+v", cmd.campaign)
	}

	for _, tt := range []struct {
		args []string
		want command
	}{
		{[]string{"campaign-status", "--id", "c1", "--json"}, command{name: cmdCampaignStatus, id: "c1", workflowID: "c1", jsonOut: true}},
		{[]string{"campaign-status", "c1"}, command{name: cmdCampaignStatus, workflowID: "c1"}},
		{[]string{"approve", "--id", "c1", "--task", "a"}, command{name: cmdApprove, id: "c1", workflowID: "c1", task: "a"}},
		{[]string{"approve", "--workspace", "w"}, command{name: cmdApprove, workspace: "w", workflowID: "ralph-w"}},
		{[]string{"reject", "--id", "c1", "--task", "a", "--reason", "too big"}, command{name: cmdReject, id: "c1", workflowID: "c1", task: "a", reason: "too big"}},
		{[]string{"reject", "ralph-w", "--reason", "no"}, command{name: cmdReject, workflowID: "ralph-w", reason: "no"}},
	} {
		got, err := parse(tt.args...)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		tt.want.cfg = got.cfg
		if got != tt.want {
			t.Errorf("%v:\n got %+v\nwant %+v", tt.args, got, tt.want)
		}
	}
	cmd, err = parse("add-tasks", "--id", "c1", "--tasks", more)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.workflowID != "c1" || len(cmd.campaign.Tasks) != 1 || cmd.campaign.Tasks[0].ID != "c" {
		t.Errorf("add-tasks: %+v %+v", cmd, cmd.campaign)
	}
}

func TestParseCampaignCommandErrors(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "t.md")
	if err := os.WriteFile(md, []byte("- [ ] a: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "obj.yaml")
	if err := os.WriteFile(obj, []byte("branch: b\ntasks:\n  - {id: a, objective: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- {id: a, objective: x}\n- {id: a, objective: y}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"campaign"}, "--tasks is required"},
		{[]string{"campaign", "--id", "c"}, "--tasks is required"},
		{[]string{"campaign", "--tasks", filepath.Join(dir, "missing.md")}, "--tasks: open"},
		{[]string{"campaign", "--tasks", bad}, bad + `:2: task id "a" is already used at line 1`},
		{[]string{"campaign", "--tasks", md, "--id", "a/b"}, `--id "a/b": a campaign id is letters`},
		{[]string{"campaign", "--tasks", md, "--id", ".."}, `--id "..": a campaign id`},
		{[]string{"campaign", "--tasks", md, "--workspace", "w"}, "--workspace does not apply to campaign"},
		{[]string{"campaign", "--tasks", md, "extra"}, `unexpected argument "extra" (give the task file with --tasks)`},
		{[]string{"campaign", "--tasks", md, "--approve", "yes"}, `--approve must be merge or none, got "yes"`},
		{[]string{"campaign", "--tasks", md, "--parallel", "0"}, "--parallel"},
		{[]string{"campaign", "--tasks", md, "--verify", " "}, "--verify must not be blank"},
		{[]string{"campaign", "--tasks", md, "--if-running", "join"}, `--if-running must be attach or fail`},
		{[]string{"campaign", "--tasks", md, "--id", "x", "--workflow-id", "y"}, `two workflow ids: --id "x" and "y"`},
		{[]string{"campaign-status"}, "which campaign? give --id"},
		{[]string{"add-tasks", "--id", "c"}, "--tasks is required"},
		{[]string{"add-tasks", "--id", "c", "--tasks", obj}, "add-tasks takes tasks only"},
		{[]string{"reject", "--id", "c", "--task", "a"}, "reject needs --reason"},
		{[]string{"approve"}, "which run?"},
	} {
		_, err := parseArgs(tt.args, config.MapEnv{}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tt.args, err, tt.want)
		}
	}
}

// The printer redraws the block on a terminal and otherwise prints a line
// only when it changed.
func TestCampaignPrinter(t *testing.T) {
	st := campaign.CampaignStatus{Phase: "running", IntegrationBranch: "ralph/campaigns/c/integration", Head: "0123456789abcdef",
		Tasks: []campaign.TaskStatus{{ID: "a", Phase: campaign.TaskRunning, Go: 1, Round: 2}, {ID: "b", Phase: campaign.TaskWaiting}}}
	var out strings.Builder
	p := &campaignPrinter{out: &out, last: map[string]string{}}
	p.update(st)
	p.update(st)
	st.Tasks[0] = campaign.TaskStatus{ID: "a", Phase: campaign.TaskMerged, Go: 1, Round: 2, MergeCommit: "fedcba9876543210"}
	st.Merged = 1
	p.update(st)
	want := "campaign running: 0 of 2 merged into ralph/campaigns/c/integration at 0123456\n" +
		"  a                    running           go 1 round 2 merges 0\n" +
		"  b                    waiting           go 0 round 0 merges 0\n" +
		"campaign running: 1 of 2 merged into ralph/campaigns/c/integration at 0123456\n" +
		"  a                    merged            go 1 round 2 merges 0 fedcba9\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	live := &campaignPrinter{out: &out, live: true}
	live.update(st)
	live.update(st)
	if !strings.Contains(out.String(), "\x1b[3A\x1b[2Kcampaign running") || strings.Count(out.String(), "  a ") != 2 {
		t.Errorf("live output = %q", out.String())
	}
}

// A queue that paused itself says why in the header: the reason and the
// last line of its output (a verify's verdict), on one line.
func TestCampaignLinesShowThePause(t *testing.T) {
	st := campaign.CampaignStatus{Phase: "paused", PauseReason: "head-red", IntegrationBranch: "i", Head: "0123456789",
		PauseOutput: "compiling\nFAIL: TestHead\tbroken\n\n"}
	if got := campaignLines(st)[0]; got != "campaign paused: 0 of 0 merged into i at 0123456 (head-red: FAIL: TestHead broken; fix it, then starter resume)" {
		t.Errorf("header = %q", got)
	}
}

// A returned task shows its last failure on its line.
func TestTaskLineShowsFailure(t *testing.T) {
	line := taskLine(campaign.TaskStatus{ID: "b", Phase: campaign.TaskReturned, Go: 2, MergeAttempts: 1,
		LastFailure: "merge conflict in\ngreeting.txt"}, true)
	if line != "b                    returned          go 2 round 0 merges 1 merge conflict in greeting.txt" {
		t.Errorf("line = %q", line)
	}
}
