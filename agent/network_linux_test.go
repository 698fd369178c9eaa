package agent_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// TestProxiedConnectionsReachTheTranscript: every connection a command
// (run_command and the verify command) asks the sandbox's proxy for is a
// network event, before that command's result, and a transcript line.
func TestProxiedConnectionsReachTheTranscript(t *testing.T) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host-secret") }))
	defer svc.Close()
	addr := strings.TrimPrefix(svc.URL, "http://")
	port, _ := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("run_command", map[string]string{"command": "curl -s --noproxy '' http://" + addr + "/run"}),
		submit(validComplete),
	}})
	root, sessions := t.TempDir(), t.TempDir()
	h.req.Workspace = filepath.Join(root, "ws")
	if err := os.Mkdir(h.req.Workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(context.Background(), sandbox.Config{Mode: sandbox.ModeBwrap}, sandbox.Paths{
		WorkspaceRoot: root, SessionDir: sessions, HomesDir: filepath.Join(sessions, "homes"), Environ: os.Environ(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Sandbox = sb
	h.req.VerifyCommand = "curl -s --noproxy '' -k https://" + addr + "/verify; true"
	var transcript bytes.Buffer
	tr := agent.NewTranscript(&transcript, testKey)
	res, err := agent.RunSession(context.Background(), h.cfg, h.req, agent.Observers(h.events, tr))
	if err != nil || res.Report.Status != "complete" {
		t.Fatalf("session: %+v %v", res, err)
	}
	var kinds []string
	for _, e := range h.events.all() {
		kinds = append(kinds, string(e.Kind))
	}
	joined := strings.Join(kinds, " ")
	if !strings.Contains(joined, "tool_call network tool_result") || !strings.Contains(joined, "verify_start network verify_result") {
		t.Errorf("event order: %s", joined)
	}
	nets := h.events.ofKind(agent.EventNetwork)
	if len(nets) != 2 || nets[0].Network.Method != "GET" || nets[1].Network.Method != "CONNECT" || nets[1].Tool != agent.VerifyTool {
		t.Fatalf("network events: %+v", nets)
	}
	for _, n := range nets {
		if n.Network.Allowed || n.Network.Rule != "loopback" || n.Network.Port != port || n.Network.Host != "127.0.0.1" {
			t.Errorf("record %+v", n.Network)
		}
	}
	if !strings.Contains(transcript.String(), `"kind":"network"`) || !strings.Contains(transcript.String(), `"rule":"loopback"`) {
		t.Errorf("transcript lacks the network lines:\n%s", transcript.String())
	}
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Raw), "host-secret") {
			t.Errorf("request %d to the model carries the host service's answer", r.Index)
		}
	}
}
