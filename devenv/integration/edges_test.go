package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// listeningLoopbackPorts are the TCP ports something on this host listens
// on at 127.0.0.1 or on every address: the Temporal frontend (gRPC and its
// HTTP API), the scripted model, and whatever else runs here.
func listeningLoopbackPorts(t *testing.T) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[3] != "0A" { // LISTEN
				continue
			}
			addr, portHex, _ := strings.Cut(fields[1], ":")
			if addr != "0100007F" && strings.Trim(addr, "0") != "" && addr != "00000000000000000000000001000000" {
				continue // only loopback and wildcard listeners
			}
			p, _ := strconv.ParseInt(portHex, 16, 32)
			if !seen[int(p)] {
				seen[int(p)] = true
				ports = append(ports, int(p))
			}
		}
		f.Close()
	}
	return ports
}

// TestRealStackSandboxEdges: with the defaults (proxy network), one round's
// commands try the worker host's services — every listening loopback port,
// the Temporal frontend's among them, directly and through the proxy —,
// fill /tmp, fork past the pids limit and allocate past the memory limit,
// while a second round on the same worker runs a steady command. Asserted
// on what reached the model, the transcript, the worker's start line and
// the host.
func TestRealStackSandboxEdges(t *testing.T) {
	t.Parallel()
	testkit.RequireCgroups(t)
	_, frontPort, _ := net.SplitHostPort(suite.address)
	ports := listeningLoopbackPorts(t)
	var portList []string
	for _, p := range ports {
		portList = append(portList, strconv.Itoa(p))
	}
	if !strings.Contains(" "+strings.Join(portList, " ")+" ", " "+frontPort+" ") {
		t.Fatalf("the frontend port %s is not among the listening ports %v", frontPort, portList)
	}
	probe := `reached=0; refused=0; for p in ` + strings.Join(portList, " ") + `; do
  if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then reached=$((reached+1)); echo DIRECT-REACHED $p; fi
  code=$(curl -s -o /tmp/body -w '%{http_code}' -m 10 --noproxy '' http://127.0.0.1:$p/)
  if [ "$code" = 403 ] && grep -q 'refused: loopback' /tmp/body; then refused=$((refused+1)); else echo PROXY-ANSWERED $p $code; fi
done
echo "direct-reached=$reached proxy-refused=$refused of ` + strconv.Itoa(len(ports)) + `"
curl -sS -m 10 --noproxy '' -k https://127.0.0.1:` + frontPort + `/ 2>&1 | tail -1`
	const (
		tmpFill  = `head -c 2G /dev/zero > /tmp/fill; echo "tmp-write-exit=$?"; df -m /tmp | tail -1`
		forkLoop = `for i in $(seq 400); do sleep 7071 >/dev/null 2>&1 & done; echo loop-ended`
		memHog   = `x=$(head -c 1G /dev/zero | tr '\0' a); echo survived ${#x}`
	)
	steps := []string{probe, tmpFill, forkLoop, memHog}
	var outputs sync.Map
	script := agentScript(func(tn turn) fakeopenai.Response {
		if strings.Contains(tn.Prompt(), "steady-objective") {
			if tn.Step() == 0 {
				return tool("run_command", map[string]any{"command": `for i in $(seq 30); do echo $i > count.txt; sleep 0.3; done; echo steady-$(cat count.txt)`, "timeout_seconds": 300})
			}
			outputs.Store("steady", tn.LastToolOutput())
			return submit(completeArgs("steady", "counted"))
		}
		if tn.Step() > 0 {
			outputs.Store(tn.Step()-1, tn.LastToolOutput())
		}
		if tn.Step() < len(steps) {
			return tool("run_command", map[string]any{"command": steps[tn.Step()], "timeout_seconds": 600})
		}
		return submit(completeArgs("edges", "tried them"))
	})
	e, _ := sandboxedEnv(t, script, "RALPH_SANDBOX_PIDS=128", "RALPH_SANDBOX_MEMORY_MB=256", "RALPH_SANDBOX_TMP_MB=128", "RALPH_CONCURRENT_ROUNDS=2")
	w := e.startWorker()
	edges := e.start("sandbox-edges", `{"objective":"edges-objective","workspace":"edges"}`)
	steady := e.start("sandbox-steady", `{"objective":"steady-objective","workspace":"steady"}`)
	if res, err := e.result(edges); err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("edges run: %+v, %v\n%s", res, err, tail(w.out.String(), 3000))
	}
	if res, err := e.result(steady); err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("steady run: %+v, %v", res, err)
	}
	out := func(k any) string { v, _ := outputs.Load(k); return fmt.Sprint(v) }

	// Network: nothing on the host answered, directly or through the proxy.
	if o := out(0); !strings.Contains(o, fmt.Sprintf("direct-reached=0 proxy-refused=%d of %d", len(ports), len(ports))) ||
		!strings.Contains(o, "CONNECT tunnel failed, response 403") {
		t.Errorf("host services from the sandbox:\n%s", o)
	}
	// /tmp: the 2 GB write stops at 128 MB (tmpfs pages count against the
	// memory limit too, so the test keeps /tmp below it).
	if o := out(1); !strings.Contains(o, "No space left on device") || !strings.Contains(o, "tmp-write-exit=1") || !strings.Contains(o, " 128 ") {
		t.Errorf("2 GB into /tmp:\n%s", o)
	}
	// pids: fork fails inside the command; nothing outlives the call.
	if o := out(2); !strings.Contains(o, "fork: Resource temporarily unavailable") {
		t.Errorf("fork loop:\n%s", o)
	}
	if left, _ := exec.Command("bash", "-c", `for p in $(pgrep -f "sleep 707[1]"); do awk '$3 != "Z"' /proc/$p/stat 2>/dev/null; done`).Output(); len(strings.TrimSpace(string(left))) > 0 {
		t.Errorf("processes of the fork loop outlived the call: %s", left)
	}
	// memory: killed, and the model is told why.
	if o := out(3); !strings.Contains(o, "killed: the command exceeded its memory limit of 256 MB") || strings.Contains(o, "survived") {
		t.Errorf("memory hog:\n%s", o)
	}
	// The other round of the same worker went on untouched.
	if o := out("steady"); !strings.Contains(o, "exit code: 0\nsteady-30") {
		t.Errorf("the steady round:\n%s", o)
	}
	// What reached the model (the tool results it was sent): the refusals,
	// never a service's answer.
	for _, r := range e.model.Requests() {
		for _, m := range r.Chat.Messages {
			if m.Role == "tool" && (strings.Contains(m.Content, "DIRECT-REACHED") || strings.Contains(m.Content, "PROXY-ANSWERED")) {
				t.Errorf("request %d to the model shows a host service answering: %s", r.Index, m.Content)
			}
		}
	}
	// The transcript records each refused connection with its rule.
	refusedFront := false
	for _, f := range e.transcripts() {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			var ev struct {
				Kind    string `json:"kind"`
				Network *struct {
					Method, Host, Rule string
					Port               int
					Allowed            bool
				} `json:"network"`
			}
			if json.Unmarshal([]byte(line), &ev) != nil || ev.Kind != "network" || ev.Network == nil {
				continue
			}
			if strconv.Itoa(ev.Network.Port) == frontPort && !ev.Network.Allowed && ev.Network.Rule == "loopback" && ev.Network.Host == "127.0.0.1" {
				refusedFront = true
			}
		}
	}
	if !refusedFront {
		t.Errorf("no transcript record of the refused frontend connection in %v", e.transcripts())
	}
	// The start line says how commands reach the network and which limits hold.
	log := w.out.String()
	for _, want := range []string{`"network":"proxy (public addresses; package registries also at private and special-purpose addresses: proxy.golang.org:443 from GOPROXY default`, "memory 256 MB", "pids 128", "/tmp and /dev/shm 128 MB each"} {
		if !strings.Contains(log, want) {
			t.Errorf("the worker's start line lacks %s:\n%s", want, tail(log, 3000))
		}
	}
	e.noKeyAnywhere("sandbox-edges", "sandbox-steady")
}

// TestRealStackSandboxNetworkOff: with RALPH_SANDBOX_NETWORK=off a command
// reaches nothing, not even an allowlisted address.
func TestRealStackSandboxNetworkOff(t *testing.T) {
	t.Parallel()
	_, frontPort, _ := net.SplitHostPort(suite.address)
	var output sync.Map
	script := agentScript(func(tn turn) fakeopenai.Response {
		if tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": `env | grep -ci _proxy=; (exec 3<>/dev/tcp/127.0.0.1/` + frontPort + `) 2>&1; curl -sS -m 5 -x http://127.0.0.1:3128 http://127.0.0.1:` + frontPort + `/ 2>&1; echo done`})
		}
		output.Store("off", tn.LastToolOutput())
		return submit(completeArgs("off", "nothing reached"))
	})
	e, _ := sandboxedEnv(t, script, "RALPH_SANDBOX_NETWORK=off", "RALPH_SANDBOX_ALLOW_HOSTS=127.0.0.1")
	w := e.startWorker()
	if res, err := e.result(e.start("sandbox-net-off", `{"objective":"reach out","workspace":"off"}`)); err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("run: %+v, %v", res, err)
	}
	o, _ := output.Load("off")
	if s := fmt.Sprint(o); !strings.HasPrefix(s, "exit code: 0\n0\n") || !strings.Contains(s, "Connection refused") || !strings.Contains(s, "Failed to connect to 127.0.0.1 port 3128") {
		t.Errorf("network off:\n%s", s)
	}
	if !strings.Contains(w.out.String(), `"network":"off (no network)"`) {
		t.Errorf("start line:\n%s", tail(w.out.String(), 2000))
	}
}
