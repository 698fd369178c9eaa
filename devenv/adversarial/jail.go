// Package adversarial is the project's adversarial suite for the command
// sandbox: every probe acts from the model's side — a command run through
// tools.Workspace on a real bubblewrap sandbox with real cgroups and the
// proxy network — and asserts on the host (sysctl values, cgroup limit
// files, canary files, other workspaces, listeners, the process table,
// free disk). A new finding is one new test: build a Jail, run what the
// model would run, assert on what the host shows.
//
// The suite never skips: where bubblewrap, cgroups or root are missing it
// fails (CI runs as root with bubblewrap installed).
package adversarial

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// CommandTimeout bounds one probe command.
const CommandTimeout = 60 * time.Second

// Canary is the text planted in every file a command must not read.
const Canary = "adversarial-canary-7f3a"

// Jail is one worker's sandbox as a model's commands meet it: a workspace
// root with the model's workspace and another one, a session directory,
// and the worker's own home, each holding a canary.
type Jail struct {
	t       testing.TB
	Base    string // holds everything below
	Root    string // the workspace root
	Dir     string // the model's workspace
	Other   string // another workspace (its canary must stay unreadable and unchanged)
	Session string // the session directory (transcripts, private homes)
	Home    string // the worker's HOME
	Sandbox *sandbox.Sandbox
	WS      *tools.Workspace
}

// New builds a Jail in bwrap mode (never auto: a sandbox that falls back
// would prove nothing) with the proxy network; adjust edits the config.
func New(t testing.TB, adjust ...func(*sandbox.Config)) *Jail {
	t.Helper()
	base := t.TempDir()
	j := &Jail{t: t, Base: base, Root: filepath.Join(base, "workspaces"), Session: filepath.Join(base, "session"), Home: filepath.Join(base, "home")}
	j.Dir, j.Other = filepath.Join(j.Root, "ws"), filepath.Join(j.Root, "other")
	for _, d := range []string{j.Dir, j.Other, j.Session, j.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(j.Other, "secret"), filepath.Join(j.Session, "transcript"), filepath.Join(j.Home, ".netrc")} {
		WriteFile(t, f, Canary)
	}
	cfg := sandbox.DefaultConfig()
	cfg.Mode = sandbox.ModeBwrap
	for _, a := range adjust {
		a(&cfg)
	}
	environ := append(os.Environ(), "HOME="+j.Home)
	sb, err := sandbox.New(context.Background(), cfg, sandbox.Paths{WorkspaceRoot: j.Root, SessionDir: j.Session,
		HomesDir: filepath.Join(j.Session, "homes"), Environ: environ})
	if err != nil {
		t.Fatalf("the sandbox must work here (bubblewrap installed, run as root as CI does): %v", err)
	}
	j.Sandbox = sb
	j.WS = j.Open(j.Dir)
	return j
}

// Open opens dir (a workspace under Root) with the Jail's sandbox.
func (j *Jail) Open(dir string, opts ...tools.Option) *tools.Workspace {
	j.t.Helper()
	ws, err := tools.OpenWorkspace(dir, tools.Limits{}, append([]tools.Option{tools.WithSandbox(j.Sandbox)}, opts...)...)
	if err != nil {
		j.t.Fatal(err)
	}
	j.t.Cleanup(func() { ws.Close() })
	return ws
}

// Run runs script as the model's run_command would and returns what the
// command produced.
func (j *Jail) Run(script string) tools.ExecResult {
	j.t.Helper()
	return Run(j.t, j.WS, script)
}

// Run runs script in ws as the model's commands run.
func Run(t testing.TB, ws *tools.Workspace, script string) tools.ExecResult {
	t.Helper()
	res, err := ws.Exec(context.Background(), script, CommandTimeout, 64<<10)
	if err != nil {
		t.Fatalf("running %q: %v", script, err)
	}
	return res
}

// ReadHost reads a file as the host (the worker) sees it.
func ReadHost(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s on the host: %v", path, err)
	}
	return string(data)
}

// WriteFile writes a file on the host.
func WriteFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Unchanged snapshots host files now and, when the test ends, fails for
// each one whose content changed: what a probe must not be able to touch.
func Unchanged(t testing.TB, paths ...string) {
	t.Helper()
	before := map[string]string{}
	for _, p := range paths {
		before[p] = ReadHost(t, p)
	}
	t.Cleanup(func() {
		for _, p := range paths {
			if now := ReadHost(t, p); now != before[p] {
				t.Errorf("%s changed on the host: %q, was %q", p, now, before[p])
			}
		}
	})
}

// NoCanary fails when out holds the canary: a hidden file was read.
func NoCanary(t testing.TB, out string) {
	t.Helper()
	if strings.Contains(out, Canary) {
		t.Errorf("a command read a canary:\n%s", out)
	}
}
