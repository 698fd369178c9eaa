package campaign

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCampaignInputDefaults(t *testing.T) {
	s, err := parseCampaignInput([]byte(`{"tasks":[{"id":"a","objective":"do a"},{"id":"b","objective":"do b","dependsOn":["a"]}],"verifyCommand":"make check"}`),
		queueApartLimits(), "camp")
	if err != nil {
		t.Fatal(err)
	}
	want := campaignSettings{ID: "camp", Branch: "ralph/campaigns/camp/integration", MaxParallel: 2, VerifyCommand: "make check",
		MaxMergeAttempts: 3, MergeBatch: 1, Approve: ApproveNone}
	if !reflect.DeepEqual(s.settings, want) || len(s.tasks) != 2 || s.tasks[1].DependsOn[0] != "a" {
		t.Fatalf("got %+v %+v", s.settings, s.tasks)
	}
}

func TestParseCampaignInputErrors(t *testing.T) {
	ok := `{"id":"a","objective":"do a"}`
	cases := []struct {
		name, input, want string
	}{
		{"unknown field", `{"tasks":[` + ok + `],"verifyCommand":"x","parallel":2}`, "parallel: is not a known field"},
		{"no tasks", `{"verifyCommand":"x"}`, "tasks: is required"},
		{"empty tasks", `{"tasks":[],"verifyCommand":"x"}`, "tasks: must hold at least one task"},
		{"bad id", `{"tasks":[{"id":"A_b","objective":"x"}],"verifyCommand":"x"}`, "tasks[0].id: must be a string"},
		{"duplicate", `{"tasks":[` + ok + `,` + ok + `],"verifyCommand":"x"}`, `tasks[1].id: "a" is used by another task`},
		{"unknown dependency", `{"tasks":[{"id":"a","objective":"x","dependsOn":["zz"]}],"verifyCommand":"x"}`, `names "zz", which is no task`},
		{"cycle", `{"tasks":[{"id":"a","objective":"x","dependsOn":["b"]},{"id":"b","objective":"y","dependsOn":["a"]}],"verifyCommand":"x"}`, "has a cycle: a -> b -> a"},
		{"unknown task field", `{"tasks":[{"id":"a","objective":"x","after":["b"]}],"verifyCommand":"x"}`, "tasks[0].after: is not a known field"},
		{"no verify", `{"tasks":[` + ok + `]}`, "verifyCommand: is required"},
		{"parallel over ceiling", `{"tasks":[` + ok + `],"verifyCommand":"x","maxParallel":9}`, "maxParallel: must be between 1 and 8 (RALPH_MAX_CAMPAIGN_PARALLEL)"},
		{"approve", `{"tasks":[` + ok + `],"verifyCommand":"x","approve":"all"}`, `approve: must be "none", "merge", "plan" or "plan,merge"`},
		{"objective and tasks", `{"objective":"o","tasks":[` + ok + `],"verifyCommand":"x"}`, "objective: and tasks are both given"},
		{"objective and tasksFile", `{"objective":"o","tasksFile":"t.yaml","verifyCommand":"x"}`, "objective: and tasksFile are both given"},
		{"maxWaves without objective", `{"tasks":[` + ok + `],"verifyCommand":"x","maxWaves":2}`, "maxWaves: applies only to a campaign with an objective"},
		{"approve plan without objective", `{"tasks":[` + ok + `],"verifyCommand":"x","approve":"plan"}`, `approve: "plan" applies only to a campaign with an objective`},
		{"maxWaves over ceiling", `{"objective":"o","verifyCommand":"x","maxWaves":21}`, "maxWaves: must be between 1 and 20 (RALPH_MAX_WAVES)"},
		{"empty objective", `{"objective":"  ","verifyCommand":"x"}`, "objective:"},
		{"branch", `{"tasks":[` + ok + `],"verifyCommand":"x","branch":"a..b"}`, "branch: \"a..b\" is not a branch name"},
		{"lanes over ceiling", `{"tasks":[` + ok + `],"verifyCommand":"x","mergeLanes":9}`, "mergeLanes: must be between 1 and 8 (RALPH_MAX_MERGE_LANES)"},
		{"lanes with approvals", `{"tasks":[` + ok + `],"verifyCommand":"x","mergeLanes":2,"approve":"merge"}`, `mergeLanes: must be 1 with approve "merge"`},
		{"lanes with planned approvals", `{"objective":"do it","verifyCommand":"x","mergeLanes":2,"approve":"plan,merge"}`, `mergeLanes: must be 1 with approve "plan,merge"`},
		{"task re-allows", `{"tasks":[{"id":"a","objective":"x","protectedPaths":["docs/**","!.github/**"]}],"verifyCommand":"x","protectedPaths":[".github/**"]}`,
			`tasks[0] (a).protectedPaths[1]: "!.github/**": a task's protected paths add to the campaign's`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseCampaignInput([]byte(c.input), queueApartLimits(), "camp")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestParseCampaignInputObjective(t *testing.T) {
	s, err := parseCampaignInput([]byte(`{"objective":"make it fast","verifyCommand":"make check","approve":"plan,merge"}`), queueApartLimits(), "camp")
	if err != nil {
		t.Fatal(err)
	}
	if s.settings.Objective != "make it fast" || s.settings.MaxWaves != DefaultMaxWaves || s.settings.Approve != ApprovePlanMerge || s.tasks != nil {
		t.Fatalf("got %+v %+v", s.settings, s.tasks)
	}
}

func TestParseCampaignInputNeedsGit(t *testing.T) {
	l := queueApartLimits()
	l.Git = ""
	_, err := parseCampaignInput([]byte(`{"tasks":[{"id":"a","objective":"x"}],"verifyCommand":"x"}`), l, "camp")
	if err == nil || !strings.Contains(err.Error(), "RALPH_GIT") {
		t.Fatalf("err = %v, want one naming RALPH_GIT", err)
	}
	_, err = parseCampaignInput([]byte(`{"tasks":[{"id":"a","objective":"x"}],"verifyCommand":"x"}`), queueApartLimits(), "a/b")
	if err == nil || !strings.Contains(err.Error(), "workflow id") {
		t.Fatalf("err = %v, want one naming the workflow id", err)
	}
}

func TestParseTasksCeilingCountsExisting(t *testing.T) {
	l := queueApartLimits()
	existing := []Task{{ID: "a", Objective: "x"}}
	_, err := parseTasks([]byte(`[{"id":"b","objective":"y"},{"id":"c","objective":"z"}]`), l, existing, 2)
	if err == nil || !strings.Contains(err.Error(), "would make 3 tasks, more than 2") {
		t.Fatalf("err = %v", err)
	}
	got, err := parseTasks([]byte(`[{"id":"b","objective":"y","dependsOn":["a"]}]`), l, existing, 2)
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestAddTasksIsReadAsStrictlyAsTheInput(t *testing.T) {
	c := &campaign{limits: queueApartLimits(), byID: map[string]*taskState{}, settings: campaignSettings{ID: "camp"}}
	c.add([]Task{{ID: "a", Objective: "x"}}, 0)
	for raw, want := range map[string]string{
		`{"tasks":[{"id":"b","objective":"y","after":["a"]}]}`: "tasks[0].after: is not a known field",
		`{"task":[{"id":"b","objective":"y"}]}`:                "task: is not a known field",
		`{"tasks":[{"id":"a","objective":"y"}]}`:               `"a" is used by another task`,
	} {
		if err := c.validateAddTasks([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", raw, err, want)
		}
	}
	if err := c.validateAddTasks([]byte(`{"tasks":[{"id":"b","objective":"y","dependsOn":["a"]}]}`)); err != nil {
		t.Fatal(err)
	}
}
