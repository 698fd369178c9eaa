package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/codec"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
)

// Markers that must never appear in plaintext anywhere in an encrypted history.
const (
	secretObjective = "OBJ-ZX81 port the proprietary billing engine"
	secretSummary1  = "RPT-ZX81 first half of the billing port"
	secretNext      = "NXT-ZX81 port the invoice module"
	secretSummary2  = "RPT-ZX81 billing port finished"
	secretEvidence  = "EVD-ZX81 invoice.txt written"
)

func secrets() []string {
	return []string{secretObjective, secretSummary1, secretNext, secretSummary2, secretEvidence}
}

// encryptedScript: round 1 writes a file and hands off, round 2 completes.
func encryptedScript(tn turn) fakeopenai.Response {
	if tn.Round() == 1 {
		if tn.Step() == 0 {
			return tool("write_file", map[string]string{"path": "invoice.txt", "content": "invoice\n"})
		}
		return submit(continueArgs(secretSummary1, secretNext))
	}
	return submit(completeArgs(secretSummary2, secretEvidence))
}

// keyLine is one key file line with a fresh random key.
func keyLine(t *testing.T, id string) string {
	t.Helper()
	b := make([]byte, codec.KeySize)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return id + " " + base64.StdEncoding.EncodeToString(b)
}

func writeKeyFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ralph.keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func starterEnv(e *env, keyFile string) []string {
	return []string{"TEMPORAL_ADDRESS=" + suite.address, "TEMPORAL_NAMESPACE=" + suite.namespace,
		"RALPH_TASK_QUEUE=" + e.queue, "RALPH_ENCRYPTION_KEY_FILE=" + keyFile}
}

// showHistory is `temporal workflow show -o json` with every payload in raw
// form (no JSON shorthand), plus the given extra flags.
func showHistory(t *testing.T, id string, extra ...string) string {
	t.Helper()
	args := append([]string{"workflow", "show", "--workflow-id", id, "-o", "json", "--no-json-shorthand-payloads"}, extra...)
	out, err := temporalCLI(t, args...)
	if err != nil {
		t.Fatalf("temporal workflow show: %v\n%s", err, out)
	}
	return out
}

// payloadsIn finds every payload object in a JSON history: an object whose
// "metadata" holds an "encoding".
func payloadsIn(t *testing.T, history string) []*commonpb.Payload {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(history), &doc); err != nil {
		t.Fatalf("history is not JSON: %v", err)
	}
	var out []*commonpb.Payload
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if md, ok := v["metadata"].(map[string]any); ok && md["encoding"] != nil {
				raw, _ := json.Marshal(v)
				var p commonpb.Payload
				if err := protojson.Unmarshal(raw, &p); err != nil {
					t.Fatalf("payload %s: %v", raw, err)
				}
				out = append(out, &p)
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

// checkNoPlaintext fails when a secret appears in the raw history or in any
// payload that is not encrypted; it returns the decrypted text of the
// encrypted payloads and the key ids they were encrypted under.
func checkNoPlaintext(t *testing.T, history string, c *codec.Codec) (string, map[string]int) {
	t.Helper()
	for _, s := range secrets() {
		if strings.Contains(history, s) {
			t.Errorf("history shows %q in plaintext", s)
		}
	}
	var plain bytes.Buffer
	ids := map[string]int{}
	for _, p := range payloadsIn(t, history) {
		if string(p.Metadata[converter.MetadataEncoding]) != codec.Encoding {
			t.Logf("plaintext payload: %s %q", p.Metadata[converter.MetadataEncoding], p.Data)
			for _, s := range secrets() {
				if bytes.Contains(p.Data, []byte(s)) {
					t.Errorf("unencrypted payload (%s) carries %q", p.Metadata[converter.MetadataEncoding], s)
				}
			}
			continue
		}
		ids[string(p.Metadata[codec.MetadataKeyID])]++
		dec, err := c.Decode([]*commonpb.Payload{p})
		if err != nil {
			t.Fatalf("decrypt a history payload: %v", err)
		}
		plain.Write(dec[0].Data)
	}
	return plain.String(), ids
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := temporalserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// startCodecServer runs the suite's ralph-codec-server binary; it returns
// the endpoint once the server answers.
func startCodecServer(t *testing.T, keyFile, tokenFile string) string {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(filepath.Join(suite.binDir, "ralph-codec-server"), "--listen", addr, "--origins", "http://localhost:8233", "--token-file", tokenFile)
	cmd.Env = append(os.Environ(), "RALPH_ENCRYPTION_KEY_FILE="+keyFile)
	out := &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("codec server output:\n%s", out.String())
		}
	})
	endpoint := "http://" + addr
	err := wait.For(context.Background(), 30*time.Second, 100*time.Millisecond, func(context.Context) error {
		resp, err := http.Post(endpoint+"/decode", "application/json", strings.NewReader(`{"payloads":[]}`))
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		t.Fatalf("codec server did not answer on %s: %v", addr, err)
	}
	return endpoint
}

// An encrypted run: its history carries no objective or report text in
// plaintext, every secret is inside an encrypted payload, and the same
// history read through the codec server is plaintext.
func TestRealStackEncryptedHistory(t *testing.T) {
	t.Parallel()
	keys := writeKeyFile(t, "# rotation: newest first", keyLine(t, "k-2026"))
	e := newEnv(t, agentScript(encryptedScript), "RALPH_ENCRYPTION_KEY_FILE="+keys)
	w := e.startWorker()
	out, code := runBinary(t, "starter", starterEnv(e, keys), "run", "--workspace", "enc-ws", "--objective", secretObjective)
	if code != 0 || !strings.Contains(out, secretSummary2) {
		t.Fatalf("starter run: exit %d\n%s", code, out)
	}
	const id = "ralph-enc-ws"
	c, err := codec.Load(keys)
	if err != nil {
		t.Fatal(err)
	}
	plain, ids := checkNoPlaintext(t, showHistory(t, id), c)
	for _, s := range secrets() {
		if !strings.Contains(plain, s) {
			t.Errorf("no encrypted payload carries %q: the check above proves nothing for it", s)
		}
	}
	if ids["k-2026"] < 6 || len(ids) != 1 {
		t.Errorf("encrypted payloads by key id: %v (want the input, round inputs and outputs and the result under k-2026)", ids)
	}
	if strings.Contains(w.out.String(), readKey(t, keys)) {
		t.Error("the worker logged key material")
	}

	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("codec-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := startCodecServer(t, keys, tokenFile)
	var decoded bytes.Buffer
	for _, p := range payloadsIn(t, showHistory(t, id, "--codec-endpoint", endpoint, "--codec-auth", "Bearer codec-token-1")) {
		if enc := string(p.Metadata[converter.MetadataEncoding]); enc == codec.Encoding {
			t.Fatal("the history read through the codec server still has encrypted payloads")
		}
		decoded.Write(p.Data)
	}
	for _, s := range secrets() {
		if !strings.Contains(decoded.String(), s) {
			t.Errorf("the history read through the codec server lacks %q", s)
		}
	}
	// Without the token the codec server refuses, and nothing is decrypted.
	if out, err := temporalCLI(t, "workflow", "show", "--workflow-id", id, "-o", "json", "--no-json-shorthand-payloads", "--codec-endpoint", endpoint); err == nil {
		for _, s := range secrets() {
			if strings.Contains(out, s) {
				t.Fatalf("the codec server decrypted %q without the bearer token", s)
			}
		}
	}
}

// readKey returns the base64 key text of the first line of a key file.
func readKey(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "#") {
			return f[1]
		}
	}
	t.Fatalf("no key in %s", path)
	return ""
}

// A run started under key A keeps running after its worker is replaced by
// one whose key file lists B first (then A): the new worker reads what A
// encrypted and writes under B. A reader holding only A then fails loudly,
// naming key id B.
func TestRealStackKeyRotation(t *testing.T) {
	t.Parallel()
	lineA, lineB := keyLine(t, "A"), keyLine(t, "B")
	keysA := writeKeyFile(t, lineA)
	keysBA := writeKeyFile(t, lineB, lineA)
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		if tn.Round() == 2 && tn.Session == 1 {
			return fakeopenai.Hang() // the first worker dies in this call
		}
		return encryptedScript(tn)
	}), "RALPH_ENCRYPTION_KEY_FILE="+keysA)
	first := e.startWorker()
	began := time.Now()
	out, code := runBinary(t, "starter", starterEnv(e, keysA), "start", "--workspace", "rot-ws", "--objective", secretObjective)
	if code != 0 {
		t.Fatalf("starter start: exit %d\n%s", code, out)
	}
	const id = "ralph-rot-ws"
	if err := wait.For(context.Background(), 60*time.Second, 50*time.Millisecond, func(context.Context) error {
		if !sawRound(e.model, 2) {
			return errors.New("round 2 never reached the model")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.done
	t.Logf("%s: first worker killed in round 2", time.Since(began))
	e.startWorker("RALPH_ENCRYPTION_KEY_FILE=" + keysBA)
	t.Logf("%s: worker with B,A polling", time.Since(began))

	out, code = runBinary(t, "starter", starterEnv(e, keysBA), "result", "--workflow-id", id)
	if code != 0 || !strings.Contains(out, secretSummary2) {
		t.Fatalf("starter result under B,A: exit %d\n%s", code, out)
	}
	t.Logf("%s: run completed", time.Since(began))
	rotated, err := codec.Load(keysBA)
	if err != nil {
		t.Fatal(err)
	}
	_, ids := checkNoPlaintext(t, showHistory(t, id), rotated)
	if ids["A"] == 0 || ids["B"] == 0 {
		t.Fatalf("encrypted payloads by key id: %v, want some under A (first worker) and some under B (after rotation)", ids)
	}

	// The result was written under B: a reader with only A must fail naming B.
	out, code = runBinary(t, "starter", starterEnv(e, keysA), "result", "--workflow-id", id)
	t.Logf("%s: reader with only A finished", time.Since(began))
	if code == 0 || !strings.Contains(out, `key id "B"`) {
		t.Fatalf("starter result with only key A: exit %d, want a failure naming key id \"B\"\n%s", code, out)
	}
	if strings.Contains(out, secretSummary2) {
		t.Fatal("a reader without key B showed the result")
	}
	for _, key := range []string{strings.Fields(lineA)[1], strings.Fields(lineB)[1]} {
		if strings.Contains(out, key) {
			t.Fatal("the starter printed key material")
		}
		for _, w := range e.workers {
			if strings.Contains(w.out.String(), key) {
				t.Fatal("a worker logged key material")
			}
		}
	}
}

func sawRound(m *fakeopenai.Server, round int) bool {
	for _, r := range m.Requests() {
		if r.Round() == round {
			return true
		}
	}
	return false
}

// A worker whose key file lacks the run's key fails the workflow task loudly,
// naming the key id, and never the run: once a worker with that key takes
// over, the run completes.
func TestRealStackWorkerWithoutTheKeyFailsLoudly(t *testing.T) {
	t.Parallel()
	lineA, lineC := keyLine(t, "A"), keyLine(t, "C")
	keysA, keysC, keysCA := writeKeyFile(t, lineA), writeKeyFile(t, lineC), writeKeyFile(t, lineC, lineA)
	e := newEnv(t, agentScript(encryptedScript), "RALPH_ENCRYPTION_KEY_FILE="+keysC)
	wrong := e.startWorker()
	out, code := runBinary(t, "starter", starterEnv(e, keysA), "start", "--workspace", "nokey-ws", "--objective", secretObjective)
	if code != 0 {
		t.Fatalf("starter start: exit %d\n%s", code, out)
	}
	if err := wait.For(context.Background(), 60*time.Second, 100*time.Millisecond, func(context.Context) error {
		if !strings.Contains(wrong.out.String(), `key id \"A\"`) {
			return errors.New(`the worker without key A did not report a failure naming key id "A"`)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(wrong.out.String(), secretObjective) {
		t.Fatal("the worker without the key logged the objective")
	}
	e.drain(wrong)
	st := e.client.GetWorkflowHistory(context.Background(), "ralph-nokey-ws", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	failedTasks := 0
	for st.HasNext() {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			failedTasks++
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			t.Fatal("the run failed: a missing key must fail the workflow task only")
		}
	}
	if failedTasks == 0 {
		t.Fatal("no WorkflowTaskFailed event in the history")
	}

	e.startWorker("RALPH_ENCRYPTION_KEY_FILE=" + keysCA)
	out, code = runBinary(t, "starter", starterEnv(e, keysCA), "result", "--workflow-id", "ralph-nokey-ws")
	if code != 0 || !strings.Contains(out, secretSummary2) {
		t.Fatalf("after the key was added: exit %d\n%s", code, out)
	}
}
