package main

import (
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

// The planning demo (`make demo-plan`, ralph-local --plan, SPEC 40): a
// campaign from one objective. The demo's scripted model, as wave 1's
// planner, plans the three tasks the objective lists (readme after
// english); they run as the campaign demo's tasks do (a line added to a
// file) and merge; wave 2's planner finds every line on the integration
// head and reports complete; the verify command passes there. It runs on
// the campaign demo's bare remote, seeded afresh with farewells.txt too.
const (
	planFlag = "--plan"
	planID   = "plan-demo"
)

// planObjective is the demo's objective. Its "- id: objective" lines, with
// "(after id)" naming a dependency, are what the scripted planner plans;
// each objective is one the scripted model plays as a task (an added line,
// internal/fakeopenai/demo_campaign.go).
const planObjective = `Greet the world from this repository. The objective is met when the integration branch holds each of these changes:
- english: In greetings.txt, add the line "Hello, world!" after the first line.
- farewell: In farewells.txt, add the line "Goodbye, world!" after the first line.
- readme: In README.md, add the line "Run bash check.sh to check the greetings." after the first line. (after english)`

// planSeed is the campaign demo's seed and the file the farewell edits.
func planSeed() map[string]string {
	seed := map[string]string{"farewells.txt": "# Farewells, one per line\n"}
	for name, content := range campaignSeed {
		seed[name] = content
	}
	return seed
}

// preparePlan seeds a fresh bare remote and removes an earlier planning
// demo's workspaces.
func (l *local) preparePlan(state string, env config.MapEnv) (string, error) {
	remote := env[gitws.SettingRemote]
	dir := filepath.Join(state, campaignDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return remote, err
	}
	return remote, seedRemote(remote, filepath.Join(dir, "seed"), planSeed(), filepath.Join(env["RALPH_WORKSPACE_ROOT"], "campaigns", planID))
}

// runPlan starts the planning demo in the foreground: the starter prints
// each wave's plan before its loops' lines and the waves in the result;
// the integration branch's graph ends it.
func (l *local) runPlan(s settings, addr string, env config.MapEnv, w *worker) int {
	remote, err := l.preparePlan(filepath.Join(l.dir, stateDir), env)
	if err != nil {
		l.say("error: %v", err)
		return exitFailed
	}
	l.say("planning demo: a campaign from one objective on the bare remote %s (%s=%s); planners split it into waves of tasks", rel(l.dir, remote), envGit, gitws.ModeRemote)
	l.say("objective: %s", planObjective)
	l.say("Temporal UI: http://127.0.0.1:%d/namespaces/default/workflows/%s", s.uiPort, planID)
	rc := l.starter(env, w, []string{"campaign", "--address", addr, "--namespace", client.DefaultNamespace,
		"--objective", planObjective, "--id", planID, "--verify", campaignVerify, "--parallel", "2", "--max-waves", "3"})
	if rc != exitUsage {
		l.showGraph(remote, planID)
	}
	l.say("%s", exitMeaning(rc))
	return rc
}
