package adversarial

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// CLIKinds are the CLIs a scripted CLI stands in for.
var CLIKinds = []string{cli.ClaudeCode, cli.Codex, cli.Opencode}

// CLIRound is what one round of a scripted CLI left: the round's result and
// the CLI's output lines.
type CLIRound struct {
	Result agent.Result
	Err    error
	Output []string
}

var scripted struct {
	once sync.Once
	path string
	err  error
}

// scriptedCLI builds ./scriptedcli once (static: it runs in the sandbox).
func scriptedCLI(t testing.TB) string {
	t.Helper()
	scripted.once.Do(func() {
		dir, err := os.MkdirTemp("", "scriptedcli-")
		if err != nil {
			scripted.err = err
			return
		}
		scripted.path = filepath.Join(dir, "scriptedcli")
		cmd := exec.Command("go", "build", "-o", scripted.path, "github.com/ralph-temporal/ralph/devenv/adversarial/scriptedcli")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			scripted.err = fmt.Errorf("%w: %s", err, out)
		}
	})
	if scripted.err != nil {
		t.Fatalf("building the scripted CLI: %v", scripted.err)
	}
	return scripted.path
}

// RunCLI runs one round of kind through the real cli.Provider — its
// gateway, report socket and bubblewrap — with the scripted CLI in place of
// kind's binary: attempt is the shell script the first attempt runs,
// continuation the one the continuation runs (both in the workspace, as
// the model's shell command sees it, with the CLI's environment).
func (j *Jail) RunCLI(kind, attempt, continuation string, req agent.Request) CLIRound {
	j.t.Helper()
	d, ok := cli.Lookup(kind)
	if !ok {
		j.t.Fatalf("no CLI %q", kind)
	}
	dir := filepath.Join(j.Dir, ".scripted-cli")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.t.Fatal(err)
	}
	bin := filepath.Join(dir, "cli")
	data, err := os.ReadFile(scriptedCLI(j.t))
	if err != nil {
		j.t.Fatal(err)
	}
	for name, text := range map[string]string{"cli": string(data), "attempt.sh": attempt, "continuation.sh": continuation} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			j.t.Fatal(err)
		}
	}
	srv := fakeopenai.NewServer(fakeopenai.Script{})
	defer srv.Close()
	cfg := agent.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Sandbox = srv.BaseURL(), "sk-adversarial-key", "fake-model", j.Sandbox
	p := cli.Provider{Dialect: d, Command: bin, Model: "fake-model", Idle: time.Minute, Config: cfg,
		Upstream: srv.BaseURL(), Key: "sk-adversarial-key"}
	req.Workspace = j.Dir
	if req.SessionID == "" {
		req.SessionID, req.Objective, req.Round, req.MaxRounds = "s1", "Work.", 1, 2
	}
	var round CLIRound
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	round.Result, round.Err = p.Run(ctx, req, agent.ObserverFunc(func(e agent.Event) {
		if e.Kind == agent.EventAgentOutput || e.Kind == agent.EventAgentExit {
			mu.Lock()
			round.Output = append(round.Output, e.Output)
			mu.Unlock()
		}
	}))
	return round
}
