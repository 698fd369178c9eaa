package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/report"
)

// The sandbox's edges (docs/security.md#commands-the-sandbox), from the model's side: what the
// model plants must never run in, or steer, the worker's own git steps.

// nestedPlant is a command that makes sub/ a repository of its own whose
// smudge and clean filters, fsmonitor and hooks append the environment
// they get to canary (a host path: they would run as the worker), and
// asks the outer repository to recurse into it (.gitmodules, and the outer
// .git/config, which only works where .git is writable).
func nestedPlant(canary string) string {
	prog := "sh -c 'env >> " + canary + "; cat'"
	hook := "printf '#!/bin/sh\\nenv >> " + canary + "\\n'"
	return strings.Join([]string{
		"git init -q sub && cd sub",
		"git config user.name m && git config user.email m@x",
		"echo nested > a.txt && echo '* filter=evil' > .gitattributes",
		"git add -A && git commit -q -m nested",
		`git config filter.evil.smudge "` + prog + `"`,
		`git config filter.evil.clean "` + prog + `"`,
		`git config core.fsmonitor "` + prog + `"`,
		"mkdir -p .git/hooks",
		"for h in post-checkout reference-transaction post-index-change; do " + hook + " > .git/hooks/$h; chmod +x .git/hooks/$h; done",
		"cd ..",
		`printf '[submodule "sub"]\n\tpath = sub\n\turl = ./sub\n' > .gitmodules`,
		"git config submodule.recurse true 2>&1 || echo OUTER-CONFIG-REFUSED",
		"git config submodule.sub.url $PWD/sub 2>&1; git config submodule.sub.active true 2>&1",
		"echo PLANTED",
	}, "; ")
}

func noCanaryFile(t *testing.T, canary string) {
	t.Helper()
	if data, err := os.ReadFile(canary); err == nil {
		t.Fatalf("a program the model planted ran in a worker's git step, with:\n%s", data)
	}
}

// requestsContain reports whether any request to the model carries s.
func requestsContain(model *fakeopenai.Server, s string) bool {
	for _, r := range model.Requests() {
		if strings.Contains(string(r.Raw), s) {
			return true
		}
	}
	return false
}

// killAndRetry waits for round 2's long command, starts a second worker
// and kills the first with SIGKILL, so the round's next attempt runs the
// retry path (leftovers saved, tree reset) on the planted workspace.
func killAndRetry(t *testing.T, e *env, first *process, dir string, extraEnv ...string) {
	t.Helper()
	waitForPIDs(t, filepath.Join(dir, "pids.txt"), 2)
	e.startWorker(extraEnv...)
	first.kill(t)
}

// nestedAttack is the script both git modes face: round 1 plays plant (the
// nested repository and the mode's own probes, one step each) and continues;
// round 2's first session changes the nested work tree, runs probe and then
// the long command, and is lost with its worker; the retry completes.
func nestedAttack(plant []fakeopenai.Response, probe string) fakeopenai.Script {
	return agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() == 1 && tn.Step() < len(plant):
			return plant[tn.Step()]
		case tn.Round() == 1:
			return submit(continueArgs("planted a nested repository", "change it"))
		case tn.Session == 1 && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo changed > sub/a.txt; " + probe + "; " + longCommand})
		case tn.Session == 1:
			return fakeopenai.Text("the lost session must never get here")
		default:
			return submit(completeArgs("finished after the retry", "the plant never ran"))
		}
	})
}

// runNestedAttack runs the nested attack under git mode (run
// "edges-<mode>-nested", workspace "edge<mode>"), killing the worker in
// round 2 so the next attempt takes the retry path. The run must complete
// after 2 rounds with no planted program run; it returns the run's id and
// workspace directory.
func runNestedAttack(t *testing.T, e *env, mode, canary string) (id, dir string) {
	t.Helper()
	first := e.startWorker()
	id = "edges-" + mode + "-nested"
	run := e.start(id, `{"objective":"plant","workspace":"edge`+mode+`"}`)
	dir = filepath.Join(e.root, "edge"+mode)
	killAndRetry(t, e, first, dir)
	res, err := e.result(run)
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v", res)
	}
	noCanaryFile(t, canary)
	return id, dir
}

// Findings 1, 5 and 7, git local, under bubblewrap, across a retried
// attempt: .git is read-only to commands and refused by the file tools,
// the nested repository's filter and hooks never run (not at the
// checkpoint, not at the retry's reset), a FIFO blocks no tool, and the
// worker's XDG directory is invisible.
func TestRealStackEdgesGitLocalNestedRepoAcrossRetry(t *testing.T) {
	t.Parallel()
	canary := filepath.Join(t.TempDir(), "canary")
	xdg := t.TempDir()
	const xdgCanary = "xdg-canary-CREDENTIALS-4d21"
	writeFile(t, filepath.Join(xdg, "gh", "hosts.yml"), xdgCanary)
	script := nestedAttack([]fakeopenai.Response{
		tool("run_command", map[string]any{"command": nestedPlant(canary) +
			"; echo '[core]' >> .git/config 2>&1; ln -s /etc .git/evil 2>&1; mkfifo fifo; cat $XDG_CONFIG_HOME/gh/hosts.yml " + xdg + "/gh/hosts.yml 2>&1; true"}),
		tool("write_file", map[string]string{"path": ".git/config", "content": "[submodule]\n\trecurse = true\n"}),
		tool("write_file", map[string]string{"path": "sub/.git/hooks/post-commit", "content": "#!/bin/sh\nenv >> " + canary + "\n"}),
		tool("search_files", map[string]string{"pattern": "x", "path": "fifo"}),
		tool("read_file", map[string]string{"path": "fifo"}),
	}, "echo "+lostMarker+" > lost.txt")
	e, _ := sandboxedEnv(t, script, "RALPH_GIT=local", "RALPH_HEARTBEAT_TIMEOUT_SECONDS=2", "XDG_CONFIG_HOME="+xdg)
	id, dir := runNestedAttack(t, e, "local", canary)
	// On the host: nothing ran, .git is as the worker left it, the nested
	// repository never entered a checkpoint and was not checked out again.
	cfg, _ := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if strings.Contains(string(cfg), "submodule") || strings.Contains(string(cfg), "recurse") {
		t.Fatalf(".git/config was changed from the sandbox:\n%s", cfg)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".git", "evil")); err == nil {
		t.Fatal("a link was planted in .git from the sandbox")
	}
	for _, rev := range []string{"HEAD", "refs/ralph/abandoned/" + id + "/round-2-attempt-1"} {
		files := testkit.Git(t, dir, "ls-tree", "-r", "--name-only", rev)
		if strings.Contains(files, "sub") || !strings.Contains(files, ".gitmodules") {
			t.Fatalf("%s holds %q: the nested repository entered a commit", rev, files)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "sub", "a.txt")); string(data) != "changed\n" {
		t.Fatalf("the worker's reset entered the nested work tree: sub/a.txt = %q", data)
	}
	// What reached the model: refusals, never a secret.
	for _, want := range []string{"PLANTED", "Read-only file system", "OUTER-CONFIG-REFUSED", "not written in git modes", "is not a regular file"} {
		if !requestsContain(e.model, want) {
			t.Errorf("no request to the model carries %q", want)
		}
	}
	assertNothingReachedModel(t, e.model, testAPIKey, temporalKeyCanary, xdgCanary)
	e.noKeyAnywhere(id)
}

// Findings 1 and 4, git remote, without the sandbox (where the model can
// write .git itself), across a retried attempt: the recursion the outer
// config asks for never happens, the nested repository never reaches the
// branch, and the command's process-group leader carries no secret.
func TestRealStackEdgesGitRemoteNestedRepoAcrossRetry(t *testing.T) {
	t.Parallel()
	bare, _ := bareRepo(t)
	canary := filepath.Join(t.TempDir(), "canary")
	leader := "pg=$(ps -o pgid= $$ | tr -d ' '); echo LEADER-ENV; tr '\\0' '\\n' < /proc/$pg/environ"
	script := nestedAttack([]fakeopenai.Response{
		tool("run_command", map[string]any{"command": nestedPlant(canary) + "; " + leader}),
	}, leader)
	e := newEnv(t, script, "RALPH_SANDBOX=off", "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare,
		"RALPH_HEARTBEAT_TIMEOUT_SECONDS=2", "TEMPORAL_API_KEY="+temporalKeyCanary, "TEMPORAL_TLS=false")
	id, dir := runNestedAttack(t, e, "remote", canary)
	if !strings.Contains(testkit.Git(t, dir, "config", "--get", "submodule.recurse"), "true") {
		t.Fatal("the plant did not set submodule.recurse; the test proves nothing")
	}
	files := testkit.Git(t, bare, "ls-tree", "-r", "--name-only", "ralph/edgeremote")
	if strings.Contains(files, "sub") || !strings.Contains(files, ".gitmodules") {
		t.Fatalf("the branch holds %q: the nested repository was pushed", files)
	}
	if !requestsContain(e.model, "LEADER-ENV") || !requestsContain(e.model, "PATH=") {
		t.Fatal("the group leader's environment did not reach the model; the test proves nothing")
	}
	assertNothingReachedModel(t, e.model, testAPIKey, temporalKeyCanary)
	e.noKeyAnywhere(id)
}

// Finding 2, without the sandbox: links inside .git to another workspace's
// objects and refs and to a host file, and (remote mode) a remote entry
// that would redirect the push, fail the round; the other workspace, the
// host file and the decoy remote are untouched.
func TestRealStackEdgesLinksAndRedirectsInGitFailTheRound(t *testing.T) {
	t.Parallel()
	hostFile := filepath.Join(t.TempDir(), "host-file")
	writeFile(t, hostFile, "host\n")
	t.Run("local", func(t *testing.T) {
		script := agentScript(func(tn turn) fakeopenai.Response {
			switch {
			case strings.Contains(tn.Prompt(), "other work") && tn.Step() == 0:
				return tool("write_file", map[string]string{"path": "secret.txt", "content": siblingCanary + "\n"})
			case strings.Contains(tn.Prompt(), "other work"):
				return submit(completeArgs("wrote", "secret.txt"))
			case tn.Step() == 0:
				return tool("run_command", map[string]any{"command": "rm -rf .git/objects .git/refs && ln -s ../other/.git/objects .git/objects && ln -s ../other/.git/refs .git/refs && " +
					"mkdir -p .git/logs && ln -sf " + hostFile + " .git/logs/HEAD && echo x > f.txt && echo LINKED"})
			default:
				return submit(continueArgs("linked", "more"))
			}
		})
		e := newEnv(t, script, "RALPH_SANDBOX=off", "RALPH_GIT=local")
		e.startWorker()
		if _, err := e.result(e.start("edges-other", `{"objective":"other work","workspace":"other"}`)); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(e.root, "other")
		before := testkit.Git(t, other, "for-each-ref") + testkit.Git(t, other, "rev-parse", "HEAD")
		_, err := e.result(e.start("edges-links", `{"objective":"link","workspace":"victim"}`))
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != "RoundFailed" || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("err = %v, want RoundFailed naming the link", err)
		}
		if after := testkit.Git(t, other, "for-each-ref") + testkit.Git(t, other, "rev-parse", "HEAD"); after != before {
			t.Fatalf("the other workspace's refs moved:\n%s\n->\n%s", before, after)
		}
		if data, _ := os.ReadFile(hostFile); string(data) != "host\n" {
			t.Fatalf("the host file behind .git/logs/HEAD was written: %q", data)
		}
		if !requestsContain(e.model, "LINKED") {
			t.Fatal("the links were not planted; the test proves nothing")
		}
	})
	t.Run("remote", func(t *testing.T) {
		bare, _ := bareRepo(t)
		decoy, _ := bareRepo(t)
		decoyRefs := testkit.Git(t, decoy, "for-each-ref")
		script := agentScript(func(tn turn) fakeopenai.Response {
			if tn.Step() == 0 {
				return tool("run_command", map[string]any{"command": "git config remote." + bare + ".url " + decoy + " && echo x > f.txt && echo REDIRECTED"})
			}
			return submit(continueArgs("redirected", "more"))
		})
		e := newEnv(t, script, "RALPH_SANDBOX=off", "RALPH_GIT=remote", "RALPH_GIT_REMOTE="+bare)
		e.startWorker()
		_, err := e.result(e.start("edges-redirect", `{"objective":"redirect","workspace":"redirect"}`))
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != "RoundFailed" || !strings.Contains(err.Error(), "RALPH_GIT_REMOTE") {
			t.Fatalf("err = %v, want RoundFailed naming RALPH_GIT_REMOTE", err)
		}
		if got := testkit.Git(t, decoy, "for-each-ref"); got != decoyRefs {
			t.Fatalf("the decoy remote was written:\n%s", got)
		}
		if !requestsContain(e.model, "REDIRECTED") {
			t.Fatal("the remote entry was not planted; the test proves nothing")
		}
	})
}

// Finding 8: a workspace named like another's derived name gets its own
// private home (and lock and transcript directory).
func TestRealStackEdgesDerivedNamesAreOneToOne(t *testing.T) {
	t.Parallel()
	const homeMark = "HOME-MARK-of-team-repo-91ac"
	script := agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case strings.Contains(tn.Prompt(), "OBJECTIVE-ALPHA-5e") && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo " + homeMark + " > $HOME/mark; echo $HOME"})
		case strings.Contains(tn.Prompt(), "OBJECTIVE-BETA-5e") && tn.Step() == 0:
			return tool("run_command", map[string]any{"command": "echo SECOND-HOME=$HOME; cat $HOME/mark 2>&1; ls -A $HOME"})
		default:
			return submit(completeArgs("done", "done"))
		}
	})
	e := newEnv(t, script, "RALPH_SANDBOX=bwrap")
	e.startWorker()
	lookalike := names.Flat("team/repo")
	if _, err := e.result(e.start("edges-names-1", `{"objective":"OBJECTIVE-ALPHA-5e","workspace":"team/repo"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.result(e.start("edges-names-2", `{"objective":"OBJECTIVE-BETA-5e","workspace":"`+lookalike+`"}`)); err != nil {
		t.Fatal(err)
	}
	if !requestsContain(e.model, "SECOND-HOME=") {
		t.Fatal("the second run's command did not run")
	}
	for _, r := range e.model.Requests() {
		if strings.Contains(r.LastToolOutput(), "SECOND-HOME=") && strings.Contains(r.LastToolOutput(), homeMark) {
			t.Fatalf("workspace %q shares the private home of team/repo", lookalike)
		}
	}
	dirs, _ := os.ReadDir(e.sessions)
	seen := map[string]bool{}
	for _, d := range dirs {
		seen[d.Name()] = true
	}
	if !seen[names.Flat("team/repo")] || !seen[names.Flat(lookalike)] || names.Flat(lookalike) == names.Flat("team/repo") {
		t.Fatalf("transcript directories %v, want one for each workspace", seen)
	}
}
