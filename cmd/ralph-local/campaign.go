package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

// The campaign demo (`make demo-campaign`, ralph-local --campaign): three
// tasks on one repository, two of them adding a line at the same place of
// greetings.txt, so the second to finish conflicts, goes back to a loop and
// merges on its second go. It runs in remote mode against a bare repository
// under .ralph, seeded afresh each time, so the merges take the real
// remote path; it ends with the integration branch's graph.
const (
	campaignFlag   = "--campaign"
	campaignID     = "campaign-demo"
	campaignVerify = "bash check.sh"
	// campaignDir holds the demo's bare remote, its seed and its task file.
	campaignDir = "campaign-demo"
)

// campaignTasks is the demo's task file: english and french add a line at
// the same place (the conflict); readme waits for english.
const campaignTasks = `# The campaign demo's tasks (a Markdown checklist; see docs/campaigns.md)

- [ ] english: In greetings.txt, add the line "Hello, world!" after the first line.
- [ ] french: In greetings.txt, add the line "Bonjour, le monde !" after the first line.
- [ ] readme: In README.md, add the line "Run bash check.sh to check the greetings." after the first line.
  after: english
`

// The seed of the demo's repository: the file both tasks edit, a README and
// the verify command, which refuses conflict markers and a lost heading.
var campaignSeed = map[string]string{
	"greetings.txt": "# Greetings, one per line\n",
	"README.md":     "# Greetings\n",
	"check.sh": `#!/usr/bin/env bash
# The campaign demo's verify command: no conflict markers anywhere, and
# greetings.txt keeps its heading.
set -euo pipefail
cd "$(dirname "$0")"
if grep -rnE '^(<<<<<<<|=======|>>>>>>>)( |$)' --exclude-dir=.git . ; then
  echo "FAIL: conflict markers above"
  exit 1
fi
head -n 1 greetings.txt | grep -qx '# Greetings, one per line' || { echo "FAIL: greetings.txt lost its heading"; exit 1; }
echo PASS
`,
}

// campaignDemo is a prepared campaign demo: its remote and task file.
type campaignDemo struct {
	remote, tasks string
}

// campaignEnv points the worker at the demo's own remote in remote mode.
func campaignEnv(env config.MapEnv, state string) {
	env[envGit] = gitws.ModeRemote
	env[gitws.SettingRemote] = filepath.Join(state, campaignDir, "remote.git")
}

// prepareCampaign seeds a fresh bare remote, writes the task file and
// removes the workspaces of an earlier demo, whose branches are gone.
func (l *local) prepareCampaign(state string, env config.MapEnv) (campaignDemo, error) {
	dir := filepath.Join(state, campaignDir)
	d := campaignDemo{remote: env[gitws.SettingRemote], tasks: filepath.Join(dir, "tasks.md")}
	if err := seedRemote(d.remote, filepath.Join(dir, "seed"), campaignSeed, filepath.Join(env["RALPH_WORKSPACE_ROOT"], "campaigns", campaignID)); err != nil {
		return d, err
	}
	return d, os.WriteFile(d.tasks, []byte(campaignTasks), 0o644)
}

// seedRemote makes a fresh bare remote whose main branch holds files,
// removing an earlier demo's remote, seed and workspaces (whose branches
// are gone).
func seedRemote(remote, seed string, files map[string]string, workspaces string) error {
	for _, p := range []string{remote, seed, workspaces} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(seed, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	author := []string{"-c", "user.name=Ralph demo", "-c", "user.email=ralph-demo@localhost"}
	steps := [][]string{
		{"init", "-q", "--bare", "--initial-branch=main", remote},
		{"-C", seed, "init", "-q", "--initial-branch=main"},
		{"-C", seed, "add", "."},
		append(append([]string{"-C", seed}, author...), "commit", "-q", "-m", "seed: the demo's files and check.sh"),
		{"-C", seed, "push", "-q", remote, "main"},
	}
	for _, args := range steps {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("seed the demo's remote: git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// runCampaign starts the demo campaign in the foreground and shows the
// integration branch's graph at the end.
func (l *local) runCampaign(s settings, addr string, env config.MapEnv, w *worker) int {
	d, err := l.prepareCampaign(filepath.Join(l.dir, stateDir), env)
	if err != nil {
		l.say("error: %v", err)
		return exitFailed
	}
	l.say("campaign demo: three tasks from %s on the bare remote %s (%s=%s); english and french edit the same line of greetings.txt, so one of them conflicts and goes back to a loop",
		rel(l.dir, d.tasks), rel(l.dir, d.remote), envGit, gitws.ModeRemote)
	l.say("Temporal UI: http://127.0.0.1:%d/namespaces/default/workflows/%s", s.uiPort, campaignID)
	rc := l.starter(env, w, []string{"campaign", "--address", addr, "--namespace", client.DefaultNamespace,
		"--tasks", d.tasks, "--id", campaignID, "--verify", campaignVerify, "--parallel", "2"})
	if rc != exitUsage {
		l.showGraph(d.remote, campaignID)
	}
	l.say("%s", exitMeaning(rc))
	return rc
}

// showGraph prints `git log --graph --oneline` of a demo campaign's
// integration branch.
func (l *local) showGraph(remote, id string) {
	branch := "ralph/campaigns/" + id + "/integration"
	out, err := exec.Command("git", "--git-dir", remote, "log", "--graph", "--oneline", branch).CombinedOutput()
	if err != nil {
		l.say("no integration branch to show: git log %s: %v: %s", branch, err, strings.TrimSpace(string(out)))
		return
	}
	l.say("the integration branch %s (git --git-dir %s log --graph --oneline %s):", branch, rel(l.dir, remote), branch)
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		fmt.Fprintf(l.stderr, "    %s\n", line)
	}
}
