//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// sandboxFixture is a workspace inside a workspace root, beside a sibling
// workspace and a session directory that both hold a secret.
type sandboxFixture struct {
	w                           *Workspace
	root, dir, sibling, session string
}

const siblingSecret = "SIBLING-WORKSPACE-SECRET-4c1e"

func newSandboxFixture(t testing.TB, mode string, cfg sandbox.Config) sandboxFixture {
	t.Helper()
	f := sandboxFixture{root: t.TempDir(), session: t.TempDir()}
	f.dir, f.sibling = filepath.Join(f.root, "ws"), filepath.Join(f.root, "other")
	for _, d := range []string{f.dir, f.sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(f.sibling, "secret.txt"), filepath.Join(f.session, "transcript.jsonl")} {
		if err := os.WriteFile(p, []byte(siblingSecret), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Mode = mode
	sb, err := sandbox.New(context.Background(), cfg, sandbox.Paths{
		WorkspaceRoot: f.root, SessionDir: f.session, HomesDir: filepath.Join(f.session, "homes"), Environ: os.Environ(),
	})
	if err != nil {
		t.Fatalf("sandbox.New(%s): %v", mode, err)
	}
	if sb.Mode() != mode {
		t.Fatalf("sandbox mode = %s, want %s", sb.Mode(), mode)
	}
	f.w, err = OpenWorkspace(f.dir, DefaultLimits(), WithSandbox(sb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.w.Close() })
	return f
}

func TestSandboxedCommandBasics(t *testing.T) {
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetHost})
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "echo out; echo err >&2; pwd; exit 3"}))
	if want := "exit code: 3\nout\nerr\n" + f.dir + "\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// bwrap reports a signalled command the way a shell does: 128+n.
	out = mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "kill -TERM $$"}))
	if !strings.HasPrefix(out, "exit code: 143") {
		t.Fatalf("signalled: %q", out)
	}
	res, err := f.w.Exec(context.Background(), "echo verify; exit 1", time.Minute, 100)
	if err != nil || res.ExitCode != 1 || res.Output != "verify\n" {
		t.Fatalf("Exec = %+v, %v", res, err)
	}
}

// Under bubblewrap only the workspace and a private /tmp are writable, and
// neither a sibling workspace, the session directory nor the worker's home
// can be read; /proc shows only the command's own processes.
func TestSandboxConfinesCommands(t *testing.T) {
	t.Setenv("RALPH_TEST_WORKER_SECRET", "worker-env-canary-93b2")
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetHost})
	home, _ := os.UserHomeDir()
	probes := map[string]string{
		"write system":     "touch /etc/ralph-sandbox-test",
		"write root":       "touch " + filepath.Join(f.root, "escape"),
		"write session":    "touch " + filepath.Join(f.session, "escape"),
		"read sibling":     "cat " + filepath.Join(f.sibling, "secret.txt"),
		"read session":     "cat " + filepath.Join(f.session, "transcript.jsonl"),
		"list worker home": "test -n \"$(ls -A " + home + ")\"",
	}
	for name, cmd := range probes {
		out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": cmd}))
		if strings.HasPrefix(out, "exit code: 0\n") {
			t.Errorf("%s succeeded inside the sandbox: %q", name, out)
		}
	}
	for _, p := range []string{"/etc/ralph-sandbox-test", filepath.Join(f.root, "escape"), filepath.Join(f.session, "escape")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a command wrote %s", p)
		}
	}
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "cat /proc/*/environ /proc/$PPID/environ | tr '\\0' '\\n'; env; ls " + f.root}))
	if strings.Contains(out, "worker-env-canary-93b2") || strings.Contains(out, siblingSecret) || strings.Contains(out, "other") {
		t.Errorf("the worker's environment or a sibling workspace reached the command:\n%s", out)
	}
	out = mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "ls /proc | grep -c '^[0-9]'"}))
	if n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "exit code: 0\n"))); n == 0 || n > 5 {
		t.Errorf("/proc inside the sandbox lists %d processes, want only the command's own: %q", n, out)
	}
	// What is allowed still works: the workspace, /tmp (private), HOME.
	out = mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "echo w > in-ws && echo t > /tmp/ralph-private && echo h > $HOME/cache && echo $HOME $TMPDIR"}))
	if !strings.HasPrefix(out, "exit code: 0\n") || !strings.Contains(out, filepath.Join(f.session, "homes")) || !strings.HasSuffix(out, " /tmp\n") {
		t.Fatalf("allowed writes failed: %q", out)
	}
	if _, err := os.Stat("/tmp/ralph-private"); err == nil {
		t.Error("the sandbox's /tmp is the host's")
	}
	if readTestFile(t, filepath.Join(f.dir, "in-ws")) != "w\n" {
		t.Error("workspace write lost")
	}
	// The private home persists between calls (tool caches survive rounds).
	out = mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "cat $HOME/cache"}))
	if out != "exit code: 0\nh\n" {
		t.Errorf("private home did not persist: %q", out)
	}
}

// interfacesCommand lists the network interfaces of the caller's network
// namespace (/proc/net/dev follows the namespace; /sys, bound from the
// host, does not).
const interfacesCommand = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '"

func TestSandboxCommandEnvNamesAndNetwork(t *testing.T) {
	t.Setenv("RALPH_TEST_PASSED", "passed-value")
	t.Setenv("DATABASE_URL", "postgres://u:hunter2@db/x")
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetOff, CommandEnv: []string{"RALPH_TEST_PASSED"}})
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "env"}))
	if !strings.Contains(out, "RALPH_TEST_PASSED=passed-value\n") || strings.Contains(out, "hunter2") {
		t.Errorf("RALPH_COMMAND_ENV not applied: %s", out)
	}
	// Without the network only the loopback device is left.
	if out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": interfacesCommand})); out != "exit code: 0\nlo " {
		t.Errorf("network not unshared: %q", out)
	}
	// With it (the default) the command sees the worker's interfaces.
	host, err := exec.Command("bash", "-c", interfacesCommand).Output()
	if err != nil {
		t.Fatal(err)
	}
	open := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetHost})
	if out := mustOK(t, call(t, open.w, "run_command", map[string]any{"command": interfacesCommand})); out != "exit code: 0\n"+string(host) {
		t.Errorf("network kept: got %q, the worker has %q", out, host)
	}
}

// A jailed command gets the worker's package registries, so a team's
// GOPROXY is what go uses inside; one holding a password stays outside.
func TestSandboxCommandSeesPackageRegistries(t *testing.T) {
	t.Setenv("GOPROXY", "https://goproxy.corp.internal,direct")
	t.Setenv("GONOSUMDB", "*.corp.internal")
	t.Setenv("npm_config_registry", "https://npm.corp.internal/")
	t.Setenv("PIP_INDEX_URL", "https://ci:hunter2@pypi.corp.internal/simple")
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetOff})
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "env; go env GOPROXY GONOSUMDB"}))
	for _, want := range []string{"GOPROXY=https://goproxy.corp.internal,direct\n", "GONOSUMDB=*.corp.internal\n",
		"npm_config_registry=https://npm.corp.internal/\n", "\nhttps://goproxy.corp.internal,direct\n*.corp.internal\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing from the jailed command's output:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, "PIP_INDEX_URL") {
		t.Errorf("a registry URL with a password reached the command:\n%s", out)
	}
}

// detachedSpawns start processes that leave the command in the ways a
// command can, each recording the pid the command sees; then the command
// waits for the test to have found them. setsid leaves the process group,
// so only the PID namespace holds it: it is checked under bubblewrap only.
func detachedSpawns(bwrap bool) map[string]string {
	s := map[string]string{
		"background":  `sleep 301 & echo $! > background.pid`,
		"nohup":       `nohup sleep 302 >/dev/null 2>&1 & echo $! > nohup.pid`,
		"double-fork": `(sleep 303 >/dev/null 2>&1 </dev/null & echo $! > double-fork.pid) &`,
	}
	if bwrap {
		s["setsid"] = `setsid sleep 304 >/dev/null 2>&1 </dev/null & echo $! > setsid.pid`
		s["setsid-double-fork"] = `(setsid sleep 305 >/dev/null 2>&1 </dev/null & echo $! > setsid-double-fork.pid) &`
	}
	return s
}

func detachScript(spawns map[string]string, then string) string {
	var b strings.Builder
	for _, s := range spawns {
		b.WriteString(s + "\n")
	}
	b.WriteString("while [ ! -e found ]; do sleep 0.02; done\n" + then)
	return b.String()
}

// hostPIDs waits for every spawn's pid file and finds the processes from
// outside, then lets the command go on.
func hostPIDs(t *testing.T, dir string, spawns map[string]string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for name := range spawns {
		pid := testkit.ReadPID(t, filepath.Join(dir, name+".pid"))
		host, err := proc.HostPID(pid, dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pids[name] = host
	}
	writeTestFile(t, filepath.Join(dir, "found"), "")
	return pids
}

func TestDetachedProcessesDieWithTheCall(t *testing.T) {
	for _, mode := range []string{sandbox.ModeBwrap, sandbox.ModeOff} {
		for _, end := range []string{"return", "timeout", "cancel"} {
			t.Run(mode+"/"+end, func(t *testing.T) {
				f := newSandboxFixture(t, mode, sandbox.Config{Network: sandbox.NetHost})
				spawns := detachedSpawns(mode == sandbox.ModeBwrap)
				then := "exit 0"
				if end != "return" {
					then = "sleep 300"
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				args, _ := json.Marshal(map[string]any{"command": detachScript(spawns, then), "timeout_seconds": 5})
				type ran struct {
					res Result
					err error
				}
				done := make(chan ran, 1)
				go func() {
					res, err := toolNamed(t, f.w, "run_command").Run(ctx, args)
					done <- ran{res, err}
				}()
				pids := hostPIDs(t, f.dir, spawns)
				for name, pid := range pids {
					if !proc.Alive(pid) {
						t.Fatalf("%s (pid %d) not running before the call ended", name, pid)
					}
				}
				if end == "cancel" {
					cancel()
				}
				r := <-done
				switch end {
				case "return":
					if r.err != nil || r.res.Output != "exit code: 0\n(no output)\n" {
						t.Fatalf("return: %+v %v", r.res, r.err)
					}
				case "timeout":
					mustFail(t, r.res, "timed out after 5s")
				case "cancel":
					if !errors.Is(r.err, context.Canceled) {
						t.Fatalf("cancel: err = %v", r.err)
					}
				}
				if mode == sandbox.ModeOff {
					// A group SIGKILL is delivered, not awaited.
					for _, pid := range pids {
						assertGone(t, pid)
					}
					return
				}
				// Under bubblewrap they are gone the moment the call
				// returned: the namespace's end is awaited.
				for name, pid := range pids {
					if proc.Alive(pid) {
						t.Errorf("%s (pid %d) outlived the call", name, pid)
					}
				}
			})
		}
	}
}

// sandboxHelperEnv makes TestSandboxHelper act as a worker whose commands
// run under bubblewrap; its value is the fixture's workspace root.
const sandboxHelperEnv = "RALPH_TOOLS_SANDBOX_ROOT"

// TestSandboxHelper is not a test on its own: TestSandboxedCommandsDieWithWorker
// runs the test binary with it as a stand-in worker and kill -9s it.
func TestSandboxHelper(t *testing.T) {
	root := os.Getenv(sandboxHelperEnv)
	if root == "" {
		t.Skip("helper process only")
	}
	sb, err := sandbox.New(context.Background(), sandbox.Config{Mode: sandbox.ModeBwrap, Network: sandbox.NetHost}, sandbox.Paths{
		WorkspaceRoot: root, SessionDir: t.TempDir(), HomesDir: t.TempDir(), Environ: os.Environ(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenWorkspace(filepath.Join(root, "ws"), DefaultLimits(), WithSandbox(sb))
	if err != nil {
		t.Fatal(err)
	}
	cmd := detachScript(detachedSpawns(true), "sleep 300")
	_, _ = toolNamed(t, w, "run_command").Run(context.Background(), json.RawMessage(`{"command":`+strconv.Quote(cmd)+`}`))
	t.Fatal("the command should have outlived this process")
}

func TestSandboxedCommandsDieWithWorker(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	worker := testkit.StartStandIn(t, "TestSandboxHelper", sandboxHelperEnv+"="+root)
	pids := hostPIDs(t, dir, detachedSpawns(true))
	worker.Kill(t)
	var all []int
	for _, pid := range pids {
		all = append(all, pid)
	}
	assertGone(t, all...)
}
