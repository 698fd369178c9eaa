package main

import (
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

// The planning demo (`make demo-plan`, ralph-local --plan, SPEC 40): a
// campaign from one objective on the campaign demo's bare remote, seeded
// afresh. The demo's scripted model, as wave 1's planner
// (internal/fakeopenai's DemoPlanner), reads greetings.txt and plans one
// task per missing line, the second after the first; the tasks run as the
// campaign demo's do (a line added after the first, a conflict resolved by
// keeping both) and merge; wave 2's planner finds every line on the
// integration head and reports complete; the verify command passes there.
const (
	planFlag = "--plan"
	planID   = "plan-demo"
)

// planObjective is the demo's objective, in the form the scripted planner
// plans ("In FILE, add the lines "a", "b" and "c" after the first line.").
const planObjective = `In greetings.txt, add the lines "Hello, world!", "Bonjour, le monde !" and "Hallo, Welt!" after the first line.`

// preparePlan seeds a fresh bare remote and removes an earlier planning
// demo's workspaces.
func (l *local) preparePlan(state string, env config.MapEnv) (string, error) {
	remote := env[gitws.SettingRemote]
	dir := filepath.Join(state, campaignDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return remote, err
	}
	return remote, seedRemote(remote, filepath.Join(dir, "seed"), campaignSeed, filepath.Join(env["RALPH_WORKSPACE_ROOT"], "campaigns", planID))
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
