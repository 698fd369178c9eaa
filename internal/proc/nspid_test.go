//go:build linux

package proc

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Without a PID namespace the pid a command prints is its own; the
// sandboxed case is covered where bubblewrap runs (agent/tools).
func TestHostPIDWithoutNamespace(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	got, err := HostPID(cmd.Process.Pid, dir)
	if err != nil || got != cmd.Process.Pid {
		t.Fatalf("HostPID = %d, %v; want %d", got, err, cmd.Process.Pid)
	}
	if _, err := HostPID(cmd.Process.Pid, dir+"/elsewhere"); err == nil {
		t.Fatal("HostPID matched a process by the wrong directory")
	}
}
