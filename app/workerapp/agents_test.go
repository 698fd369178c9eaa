package workerapp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent/cli"
	"github.com/ralph-temporal/ralph/app/config"
)

// TestWorkerRefusesAMissingOrUntestedAgentCLI: the worker does not start
// (before it dials or polls) when the CLI is missing or outside the tested
// versions, and says which.
func TestWorkerRefusesAMissingOrUntestedAgentCLI(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "codex")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho codex-cli 0.150.2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		want    []string
	}{
		{filepath.Join(dir, "missing"), []string{"RALPH_AGENT=codex", "not installed", "missing"}},
		{old, []string{"RALPH_AGENT=codex", "0.150.2", ">= 0.171.0, < 0.172.0"}},
	} {
		var stderr bytes.Buffer
		env := config.MapEnv{"RALPH_WORKSPACE_ROOT": filepath.Join(dir, "ws"), "RALPH_SESSION_DIR": filepath.Join(dir, "s"),
			"RALPH_MODEL": "m", "OPENAI_API_KEY": "sk-secret-value", "RALPH_AGENT": "codex", "RALPH_AGENT_COMMAND": c.command,
			"TEMPORAL_ADDRESS": "127.0.0.1:1"}
		if code := Main(nil, env, &stderr); code != ExitUsage {
			t.Errorf("%s: exit %d, stderr %q", c.command, code, stderr.String())
		}
		for _, w := range c.want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s: stderr %q does not name %q", c.command, stderr.String(), w)
			}
		}
	}
}

// TestStartLineNamesTheAgentCLI: the pinned Codex passes the check and the
// start line names its version, path and tested range.
func TestStartLineNamesTheAgentCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the pinned Codex CLI (scripts/install-agent-clis.sh): make realstack runs it, make unit passes -short")
	}
	path := "/opt/ralph-agents/node_modules/.bin/codex"
	attrs, err := checkAgents(context.Background(), cli.Settings{Agent: cli.Codex, Command: path, Idle: cli.DefaultIdle,
		MaxInflight: cli.DefaultMaxInflight, MaxRequestMB: cli.DefaultMaxRequestMB})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"agent", "codex", "reviewAgent", "codex", "agentCLI.codex", "codex 0.171.0 (" + path + ", tested >= 0.171.0, < 0.172.0)"}
	if !reflect.DeepEqual(attrs, want) {
		t.Errorf("start line attributes %v, want %v", attrs, want)
	}
}

// TestWorkerRefusesAMissingReviewerCLI: RALPH_REVIEW_AGENT names a CLI
// that is not on PATH while the rounds run the builtin session: the worker
// does not start, and says that the reviewer's setting names it.
func TestWorkerRefusesAMissingReviewerCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	var stderr bytes.Buffer
	env := config.MapEnv{"RALPH_WORKSPACE_ROOT": filepath.Join(dir, "ws"), "RALPH_SESSION_DIR": filepath.Join(dir, "s"),
		"RALPH_MODEL": "m", "OPENAI_API_KEY": "sk-secret-value", "RALPH_REVIEW_AGENT": "claude-code", "ANTHROPIC_API_KEY": "sk-ant",
		"TEMPORAL_ADDRESS": "127.0.0.1:1"}
	if code := Main(nil, env, &stderr); code != ExitUsage {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	for _, w := range []string{"RALPH_REVIEW_AGENT=claude-code: the CLI", "not installed or not on PATH (the reviewer's CLI is found on PATH"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr %q does not say %q", stderr.String(), w)
		}
	}
	if strings.Contains(stderr.String(), "RALPH_AGENT_COMMAND") {
		t.Errorf("stderr %q points at RALPH_AGENT_COMMAND, which sets the rounds' CLI only", stderr.String())
	}
}
