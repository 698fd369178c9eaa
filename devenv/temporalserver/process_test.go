package temporalserver

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/proc"
)

// TestStopReachesTheWholeGroup: a server's children go with it, and the
// output tail is kept.
func TestStopReachesTheWholeGroup(t *testing.T) {
	cmd := exec.Command("bash", "-c", `sleep 300 & echo child=$!; echo ready; wait`)
	p, err := StartProcess("test server", cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(10 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		for _, line := range strings.Split(p.Output(), "\n") {
			if v, ok := strings.CutPrefix(line, "child="); ok {
				child, _ = strconv.Atoi(v)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 {
		t.Fatalf("no child pid in output %q", p.Output())
	}
	if err := p.Stop(syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() || proc.Alive(child) {
		t.Fatalf("after Stop: exited=%v, child %d alive=%v", p.Exited(), child, proc.Alive(child))
	}
	if err := p.Stop(syscall.SIGTERM, time.Second); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestStopFallsBackToKill: a server that ignores SIGTERM is killed.
func TestStopFallsBackToKill(t *testing.T) {
	cmd := exec.Command("bash", "-c", `trap "" TERM; echo ready; while :; do sleep 0.1; done`)
	p, err := StartProcess("stubborn server", cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Output(), "ready") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Stop(syscall.SIGTERM, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Fatal("still running after Stop")
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	tail := NewTail(4)
	_, _ = tail.Write([]byte("abc"))
	_, _ = tail.Write([]byte("defg"))
	if got := tail.String(); got != "defg" {
		t.Fatalf("tail = %q", got)
	}
}
