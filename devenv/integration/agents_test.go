package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// The agent providers on the real stack (docs/agents.md): the real worker
// runs each round with the real CLI (installed by
// scripts/install-agent-clis.sh) in real bubblewrap, against the scripted
// server speaking that CLI's API.

func TestRealStackAgentCodex(t *testing.T)      { agentRunEndsVerified(t, "codex", "codex") }
func TestRealStackAgentClaudeCode(t *testing.T) { agentRunEndsVerified(t, "claude-code", "claude") }
func TestRealStackAgentOpencode(t *testing.T)   { agentRunEndsVerified(t, "opencode", "opencode") }

// agentRunEndsVerified: a two-round run ends in a verified complete; its
// usage is what the server served; every request upstream carried the
// worker's key and none held it in its body, although round 1 printed the
// CLI's environment and every process's in the sandbox back to the model;
// the key is nowhere on disk, in logs or in history.
func agentRunEndsVerified(t *testing.T, kind, binary string) {
	per := openai.Usage{PromptTokens: 700, CompletionTokens: 30, TotalTokens: 730}
	var mu sync.Mutex
	served := 0
	script := fakeopenai.AgentScript{Usage: &per,
		Command: func(round int) string {
			if round == 1 {
				return "echo hello > hello.txt && env && cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | sort -u"
			}
			return "cat hello.txt"
		},
		Report: func(round int, _ string) fakeopenai.ReportArgs {
			if round == 1 {
				return continueArgs("Wrote hello.txt.", "Check hello.txt.")
			}
			return completeArgs("hello.txt holds hello.", "cat hello.txt printed hello")
		},
	}
	e := newEnv(t, fakeopenai.Script{Rule: script.Rule, Delivered: func(fakeopenai.Request, fakeopenai.Response) {
		mu.Lock()
		served++
		mu.Unlock()
	}}, "RALPH_AGENT="+kind, "RALPH_AGENT_COMMAND=/opt/ralph-agents/node_modules/.bin/"+binary, "RALPH_SANDBOX=bwrap",
		"ANTHROPIC_API_KEY="+testAPIKey)
	e.workerEnv = append(e.workerEnv, "ANTHROPIC_BASE_URL="+strings.TrimSuffix(e.model.BaseURL(), "/v1"))
	w := e.startWorker()
	if !strings.Contains(w.out.String(), "agentCLI."+kind) {
		t.Errorf("the start line does not name the CLI:\n%s", tail(w.out.String(), 2000))
	}
	id := "agent-" + kind
	res, err := e.result(e.start(id, `{"objective":"write hello.txt","verifyCommand":"grep -qx hello hello.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result %+v", res)
	}
	if st := e.status(id); len(st.Rounds) != 2 || !st.Rounds[1].Verified {
		t.Errorf("rounds %+v", st.Rounds)
	}
	mu.Lock()
	n := served
	mu.Unlock()
	want := usage.Usage{ModelCalls: n, ToolCalls: 2, PromptTokens: n * per.PromptTokens, CompletionTokens: n * per.CompletionTokens}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v (%d answers served)", res.Usage, want, n)
	}
	printed := false
	for _, req := range e.model.Requests() {
		if h := req.Header.Get("Authorization") + req.Header.Get("x-api-key"); !strings.Contains(h, testAPIKey) {
			t.Errorf("request %d reached the server without the worker's key", req.Index)
		}
		if bytes.Contains(req.Raw, []byte(testAPIKey)) {
			t.Errorf("request %d body holds the worker's key", req.Index)
		}
		printed = printed || bytes.Contains(req.Raw, []byte("ralph-attempt-"))
	}
	if !printed {
		t.Error("no request carried the CLI's environment: the key check proved nothing")
	}
	if b, err := os.ReadFile(filepath.Join(e.root, id, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt: %q %v", b, err)
	}
	e.noKeyAnywhere(id)
}
