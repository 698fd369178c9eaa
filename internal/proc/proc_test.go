package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// The parsers read this very process: its parent, CPU time and memory, and
// a child with a command name full of spaces and parentheses.
func TestReadStatStatusAndScan(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil || st.PPID != os.Getppid() || st.State == 'Z' {
		t.Fatalf("ReadStat(self) = %+v, %v; ppid want %d", st, err, os.Getppid())
	}
	status, err := ReadStatus(0)
	if err != nil || status["PPid"] != strconv.Itoa(os.Getppid()) || !strings.HasSuffix(status["VmRSS"], " kB") {
		t.Fatalf("ReadStatus(self) = PPid %q VmRSS %q, %v", status["PPid"], status["VmRSS"], err)
	}
	dir := t.TempDir()
	odd := filepath.Join(dir, "a (b) c")
	if err := os.Symlink("/bin/sleep", odd); err != nil {
		t.Fatal(err)
	}
	marker := "31.5" + strconv.Itoa(os.Getpid())[:1]
	cmd := exec.Command(odd, marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	st, err = ReadStat(cmd.Process.Pid)
	if err != nil || st.PPID != os.Getpid() {
		t.Fatalf("ReadStat(child %q) = %+v, %v", odd, st, err)
	}
	if got := Matching(odd + " " + marker); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Fatalf("Matching = %v, want [%d]", got, cmd.Process.Pid)
	}
	pids, err := PIDs()
	if err != nil || !slices.Contains(pids, os.Getpid()) || !slices.IsSorted(pids) {
		t.Fatalf("PIDs lacks this process or is unsorted (%v)", err)
	}
}

func TestWaitPIDFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pids.txt")
	cmd := exec.Command("bash", "-c", `sleep 0.2; echo $$ >> pids.txt; sleep 30 & echo $! >> pids.txt; wait`)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pids, err := WaitPIDFile(context.Background(), path, 2, 10*time.Second)
	if err != nil || len(pids) != 2 || pids[0] != cmd.Process.Pid || !Alive(pids[1]) {
		t.Fatalf("WaitPIDFile = %v, %v; want [%d, the sleep]", pids, err, cmd.Process.Pid)
	}
	for _, pid := range pids[1:] {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if _, err := WaitPIDFile(context.Background(), path, 3, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "lists 2 of 3 pids") {
		t.Fatalf("a short file: err = %v", err)
	}
}

func TestWaitGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if left := WaitGone(context.Background(), 50*time.Millisecond, pid); len(left) != 1 || left[0] != pid {
		t.Fatalf("a running sleep: WaitGone = %v", left)
	}
	_ = cmd.Process.Kill()
	if left := WaitGone(context.Background(), 5*time.Second, pid); left != nil {
		t.Fatalf("a killed sleep (a zombie until reaped): WaitGone = %v", left)
	}
	_ = cmd.Wait()
}
