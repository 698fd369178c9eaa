package integration

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// The jail on the real stack, from the scripted model's side: its command
// runs as an unprivileged uid and cannot write a host sysctl or make a user
// namespace, and what it plants in its HOME does not reach the verify
// command, which passes only with a HOME nobody wrote and a non-zero uid.
func TestRealStackJailHoldsFromTheModelsSide(t *testing.T) {
	t.Parallel()
	before, err := os.ReadFile("/proc/sys/vm/swappiness")
	if err != nil {
		t.Fatal(err)
	}
	attack := `id -u; echo 17 > /proc/sys/vm/swappiness 2>&1; unshare -U true 2>&1 && echo USERNS-MADE
mkdir -p $HOME/.config/go; echo 'GOFLAGS=-overlay=/tmp/o.json' > $HOME/.config/go/env; echo '[alias]' > $HOME/.gitconfig; echo planted`
	var outputs sync.Map
	script := agentScript(func(tn turn) fakeopenai.Response {
		switch tn.Step() {
		case 0:
			return tool("run_command", map[string]any{"command": attack})
		default:
			outputs.Store("attack", tn.LastToolOutput())
			return submit(completeArgs("attacked the host", "the verify command checks"))
		}
	})
	e, _ := sandboxedEnv(t, script)
	w := e.startWorker()
	verify := `test ! -e $HOME/.gitconfig && test ! -e $HOME/.config/go/env && test "$(id -u)" != 0`
	res, err := e.result(e.start("jail", fmt.Sprintf(`{"objective":"escape","workspace":"jail","verifyCommand":%q}`, verify)))
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("run: %+v, %v (the verify command saw the planted HOME or uid 0)", res, err)
	}
	out, _ := outputs.Load("attack")
	text := fmt.Sprint(out)
	if !strings.Contains(text, "planted") || strings.Contains(text, "USERNS-MADE") || strings.Contains(text, "exit code: 0\n0\n") {
		t.Errorf("the attack ran as root or made a user namespace:\n%s", text)
	}
	if after, _ := os.ReadFile("/proc/sys/vm/swappiness"); string(after) != string(before) {
		t.Errorf("vm.swappiness changed on the host: %q, was %q", after, before)
	}
	if os.Geteuid() == 0 && !strings.Contains(w.out.String(), `"uid":65534`) {
		t.Errorf("the start line does not name uid 65534:\n%s", tail(w.out.String(), 3000))
	}
}
