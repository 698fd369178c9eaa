package proc

import (
	"os"
	"os/exec"
	"testing"
)

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("the test process itself is not alive")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Alive(pid) {
		t.Fatal("a running sleep is not alive")
	}
	_ = cmd.Process.Kill()
	// Killed but not reaped: a zombie, which runs nothing.
	for i := 0; i < 200 && Alive(pid); i++ {
		exec.Command("sleep", "0.01").Run()
	}
	if Alive(pid) {
		t.Fatal("a killed, unreaped process still counts as alive")
	}
	_ = cmd.Wait()
	if Alive(pid) {
		t.Fatal("a reaped process counts as alive")
	}
	if Alive(0) || Alive(-1) {
		t.Fatal("non-positive pids count as alive")
	}
}
