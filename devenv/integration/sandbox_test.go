package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/report"
)

// Canaries the worker holds in its environment and on disk; none may reach
// the model, whatever a command does to look for them.
const (
	temporalKeyCanary = "tk-canary-TEMPORAL-API-KEY-0b7e"
	tlsKeyCanary      = "tls-canary-CLIENT-KEY-DATA-51d9"
	databaseCanary    = "postgres://ralph:db-canary-PASSWORD-c3a8@db/prod"
	tlsFileCanary     = "tls-canary-KEY-FILE-CONTENT-9f20"
	siblingCanary     = "sibling-canary-WORKSPACE-77d1"
	sessionCanary     = "session-canary-TRANSCRIPT-e64a"
	homeCanary        = "home-canary-NETRC-2b95"
)

// sandboxedEnv is a worker environment with every canary in it. TLS stays
// off towards the dev server; the TLS variables are still the worker's.
func sandboxedEnv(t *testing.T, script fakeopenai.Script, extraEnv ...string) (*env, string) {
	t.Helper()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".netrc"), homeCanary)
	keyFile := filepath.Join(t.TempDir(), "client.key")
	writeFile(t, keyFile, tlsFileCanary)
	e := newEnv(t, script, append([]string{
		"RALPH_SANDBOX=bwrap",
		"HOME=" + home,
		"TEMPORAL_API_KEY=" + temporalKeyCanary,
		"TEMPORAL_TLS=false",
		"TEMPORAL_TLS_CLIENT_KEY_DATA=" + tlsKeyCanary,
		"RALPH_TEST_TLS_KEY_FILE=" + keyFile,
		"RALPH_SANDBOX_HIDE=" + keyFile,
		"DATABASE_URL=" + databaseCanary,
	}, extraEnv...)...)
	writeFile(t, filepath.Join(e.root, "sibling", "secret.txt"), siblingCanary)
	writeFile(t, filepath.Join(e.sessions, "planted", "transcript.jsonl"), sessionCanary)
	return e, keyFile
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// assertNothingReachedModel reads the scripted server's request log: every
// byte the model was sent, tool results included.
func assertNothingReachedModel(t *testing.T, model *fakeopenai.Server, canaries ...string) {
	t.Helper()
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	for _, r := range reqs {
		for _, c := range canaries {
			if strings.Contains(string(r.Raw), c) {
				t.Errorf("request %d to the model carries %q", r.Index, c)
			}
		}
	}
}

func TestRealStackSandboxKeepsWorkerSecretsFromTheModel(t *testing.T) {
	t.Parallel()
	var e *env
	var keyFile string
	// Not under /tmp: the sandbox's /tmp is a private tmpfs that takes writes.
	hostEscape := fmt.Sprintf("/var/tmp/ralph-escape-%d", os.Getpid())
	// One command goes looking everywhere a secret could be; a second
	// tries to write outside the workspace.
	look := func() string {
		return strings.Join([]string{
			"echo LOOKED-FOR-SECRETS",
			"tr '\\0' '\\n' < /proc/$PPID/environ",
			"for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done",
			"env",
			"ls -la " + e.root + " " + e.root + "/sibling",
			"cat " + e.root + "/sibling/secret.txt",
			"ls -laR " + e.sessions,
			"cat " + e.sessions + "/planted/transcript.jsonl " + e.sessions + "/*/*.jsonl",
			"cat " + keyFile + " $HOME/.netrc ~/.netrc",
			"cat " + os.Getenv("HOME") + "/.netrc",
			"echo HOME=$HOME",
		}, "; ")
	}
	write := func() string {
		return "for p in /etc/ralph-escape " + e.root + "/sibling/escape " + e.sessions + "/escape " + hostEscape + "; do " +
			"if touch $p 2>/dev/null; then echo WROTE $p; else echo REFUSED $p; fi; done"
	}
	var outputs sync.Map
	script := agentScript(func(tn turn) fakeopenai.Response {
		switch tn.Step() {
		case 0:
			return tool("run_command", map[string]any{"command": look()})
		case 1:
			outputs.Store("look", tn.LastToolOutput())
			return tool("run_command", map[string]any{"command": write()})
		default:
			outputs.Store("write", tn.LastToolOutput())
			return submit(completeArgs("looked for secrets", "found none"))
		}
	})
	e, keyFile = sandboxedEnv(t, script)
	w := e.startWorker()
	res, err := e.result(e.start("sandbox-secrets", `{"objective":"find the worker's secrets","workspace":"probe"}`))
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if !strings.Contains(w.out.String(), "command sandbox: bubblewrap") {
		t.Fatalf("the worker did not log the bubblewrap mode:\n%s", tail(w.out.String(), 3000))
	}
	looked, _ := outputs.Load("look")
	if !strings.Contains(fmt.Sprint(looked), "LOOKED-FOR-SECRETS") || !strings.Contains(fmt.Sprint(looked), "HOME="+filepath.Join(e.sessions, "homes")) {
		t.Fatalf("the looking command did not run as expected:\n%v", looked)
	}
	written, _ := outputs.Load("write")
	if strings.Contains(fmt.Sprint(written), "WROTE") || strings.Count(fmt.Sprint(written), "REFUSED") != 4 {
		t.Errorf("a write outside the workspace succeeded:\n%v", written)
	}
	for _, p := range []string{"/etc/ralph-escape", e.root + "/sibling/escape", e.sessions + "/escape", hostEscape} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	assertNothingReachedModel(t, e.model, testAPIKey, temporalKeyCanary, tlsKeyCanary, databaseCanary, "db-canary-PASSWORD",
		tlsFileCanary, siblingCanary, sessionCanary, homeCanary)
	e.noKeyAnywhere("sandbox-secrets")
}

// detachCommand leaves the command every way it can and records the pids it
// sees, then waits for the test's go-ahead (the gate file) before it exits.
const detachCommand = `setsid sleep 311 >/dev/null 2>&1 </dev/null & echo $! >> pids.txt
nohup sleep 312 >/dev/null 2>&1 & echo $! >> pids.txt
(sleep 313 >/dev/null 2>&1 </dev/null & echo $! >> pids.txt) &
(setsid sleep 314 >/dev/null 2>&1 </dev/null & echo $! >> pids.txt) &
while [ ! -e gate ]; do sleep 0.05; done; echo call-returns`

func TestRealStackSandboxDetachedProcessesEndWithTheCall(t *testing.T) {
	t.Parallel()
	var e *env
	aliveAtResult := make(chan int, 1)
	var pids []int
	var mu sync.Mutex
	script := agentScript(func(tn turn) fakeopenai.Response {
		switch tn.Step() {
		case 0:
			return tool("run_command", map[string]any{"command": detachCommand})
		case 1:
			// The model has the call's result: what it started must be gone now.
			mu.Lock()
			alive := 0
			for _, pid := range pids {
				if proc.Alive(pid) {
					alive++
				}
			}
			mu.Unlock()
			aliveAtResult <- alive
			return submit(completeArgs("detached", "processes detached"))
		default:
			return fakeopenai.Text("unexpected")
		}
	})
	e, _ = sandboxedEnv(t, script)
	e.startWorker()
	run := e.start("sandbox-detach", `{"objective":"detach processes","workspace":"detach"}`)
	dir := filepath.Join(e.root, "detach")
	found := waitForPIDs(t, filepath.Join(dir, "pids.txt"), 4)
	mu.Lock()
	pids = found
	mu.Unlock()
	for _, pid := range found {
		if !proc.Alive(pid) {
			t.Fatalf("pid %d not running before the call returned", pid)
		}
	}
	writeFile(t, filepath.Join(dir, "gate"), "")
	if res, err := e.result(run); err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if n := <-aliveAtResult; n != 0 {
		t.Fatalf("%d of %d detached processes were alive when the model got the result", n, len(found))
	}
}

func TestRealStackSandboxDetachedProcessesDieWithKilledWorker(t *testing.T) {
	t.Parallel()
	e, _ := sandboxedEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		return tool("run_command", map[string]any{"command": detachCommand})
	}))
	w := e.startWorker()
	id := "sandbox-kill"
	e.start(id, `{"objective":"detach and get killed","workspace":"killed"}`)
	t.Cleanup(func() { _ = e.client.TerminateWorkflow(context.Background(), id, "", "test over") })
	pids := waitForPIDs(t, filepath.Join(e.root, "killed", "pids.txt"), 4)
	w.kill(t)
	assertGone(t, pids, "detached processes of the killed worker")
}

// Without the sandbox the process-group kill and the lifeline still take
// down what stays in the group, on cancel and with a killed worker.
func TestRealStackSandboxOffStillKillsCommands(t *testing.T) {
	t.Parallel()
	const inGroup = `echo $$ >> pids.txt; nohup sleep 321 >/dev/null 2>&1 & echo $! >> pids.txt
(sleep 322 >/dev/null 2>&1 </dev/null & echo $! >> pids.txt) &
sleep 323 & echo $! >> pids.txt; wait`
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": inGroup, "timeout_seconds": 600})
		}
		return submit(completeArgs("slept", "slept"))
	}), "RALPH_SANDBOX=off")
	w := e.startWorker()
	if !strings.Contains(w.out.String(), "command sandbox: off") {
		t.Errorf("the worker did not log the off mode:\n%s", tail(w.out.String(), 2000))
	}
	run := e.start("sandbox-off-cancel", `{"objective":"sleep","workspace":"off-cancel"}`)
	pids := waitForPIDs(t, filepath.Join(e.root, "off-cancel", "pids.txt"), 4)
	if err := e.client.CancelWorkflow(context.Background(), "sandbox-off-cancel", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.result(run); err == nil {
		t.Fatal("the cancelled run succeeded")
	}
	assertGone(t, pids, "commands of a cancelled round without the sandbox")

	id := "sandbox-off-kill"
	e.start(id, `{"objective":"sleep","workspace":"off-kill"}`)
	t.Cleanup(func() { _ = e.client.TerminateWorkflow(context.Background(), id, "", "test over") })
	pids = waitForPIDs(t, filepath.Join(e.root, "off-kill", "pids.txt"), 4)
	w.kill(t)
	assertGone(t, pids, "commands of a killed worker without the sandbox")
}

func TestRealStackSandboxModesWithoutBubblewrap(t *testing.T) {
	t.Parallel()
	noBwrap := t.TempDir() // a PATH with bash but without bwrap
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bash, filepath.Join(noBwrap, "bash")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response { return fakeopenai.Text("unused") }))
	out, code := runBinary(t, "worker", append(e.workerEnv, "RALPH_SANDBOX=bwrap", "PATH="+noBwrap))
	if code == 0 || !strings.Contains(out, "RALPH_SANDBOX=bwrap but bubblewrap does not work here") || !strings.Contains(out, "bwrap is not installed or not on PATH") {
		t.Fatalf("bwrap mode without bubblewrap: exit %d\n%s", code, out)
	}
	w := e.startWorker("RALPH_SANDBOX=auto", "PATH="+noBwrap)
	log := w.out.String()
	if !strings.Contains(log, "commands run unsandboxed") || !strings.Contains(log, "the session directory") {
		t.Fatalf("auto mode without bubblewrap did not warn what commands can reach:\n%s", tail(log, 3000))
	}
}
