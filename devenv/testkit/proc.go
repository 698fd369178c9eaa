package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/cgroup"
	"github.com/ralph-temporal/ralph/internal/wait"
)

// pidWait bounds how long a test waits for a command to write its pid.
const pidWait = 10 * time.Second

// AwaitPID waits until path holds a whole line, as `echo $! > path` writes
// it, and returns the pid in it; it gives up after within or when ctx ends.
func AwaitPID(ctx context.Context, within time.Duration, path string) (int, error) {
	var data []byte
	err := wait.For(ctx, within, 10*time.Millisecond, func(context.Context) error {
		var err error
		if data, err = os.ReadFile(path); err == nil && !strings.HasSuffix(string(data), "\n") {
			err = errors.New("not written yet")
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pid file %s never appeared: %w", path, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("pid file %s holds %q, not a pid", path, data)
	}
	return pid, nil
}

// ReadPID waits (up to 10 s) for the pid a command writes to path; the test
// fails when none comes.
func ReadPID(t testing.TB, path string) int {
	t.Helper()
	pid, err := AwaitPID(context.Background(), pidWait, path)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// CancelOnPID calls cancel as soon as a command has written its pid to
// path (or 10 s passed without one), so a test cancels what it runs while
// that command is under way. The returned function waits for that moment
// and returns the pid; the test fails when none came.
func CancelOnPID(t testing.TB, path string, cancel context.CancelFunc) func() int {
	type found struct {
		pid int
		err error
	}
	done := make(chan found, 1)
	go func() {
		pid, err := AwaitPID(context.Background(), pidWait, path)
		cancel()
		done <- found{pid, err}
	}()
	return func() int {
		t.Helper()
		f := <-done
		if f.err != nil {
			t.Fatal(f.err)
		}
		return f.pid
	}
}

// StandIn is this test binary run again as another process, a stand-in
// worker: only the test named in StartStandIn runs, and its environment
// says what to do. Killing it with SIGKILL plays a worker that dies without
// running any cleanup code.
type StandIn struct {
	cmd *exec.Cmd
}

// StartStandIn starts the test binary running only the test named test,
// with env (KEY=value) added to this process's environment; a stand-in
// still running when the test ends is killed.
func StartStandIn(t testing.TB, test string, env ...string) *StandIn {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the stand-in %s: %v", test, err)
	}
	s := &StandIn{cmd: cmd}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return s
}

// Kill kills the stand-in with SIGKILL and reaps it.
func (s *StandIn) Kill(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill the stand-in: %v", err)
	}
	_ = s.cmd.Wait()
}

// ProcessesIn lists the processes (as "pid: command line") whose working
// directory is dir, or whose command line holds marker: what a round in
// the workspace dir left running.
func ProcessesIn(dir, marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if cwd == dir || (marker != "" && strings.Contains(line, marker)) {
			found = append(found, e.Name()+": "+line)
		}
	}
	return found
}

// ProcessesOfWorker lists the processes (as "pid: command line") in the
// command groups of the worker with pid (cgroup.Prefix): all its commands
// and agent attempts started, wherever they work, and nothing another
// worker's commands did, so tests running at once cannot see each other's.
// It needs a worker that can create groups (RequireCgroups).
func ProcessesOfWorker(pid int) []string {
	prefix := cgroup.Prefix(pid)
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		groups, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if !inGroupWithPrefix(string(groups), prefix) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		found = append(found, e.Name()+": "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return found
}

// inGroupWithPrefix reports whether a /proc/PID/cgroup text puts the
// process in a group whose name begins with prefix, in any hierarchy.
func inGroupWithPrefix(groups, prefix string) bool {
	for _, line := range strings.Split(groups, "\n") {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(line, ":", 3)
		if len(f) < 3 {
			continue
		}
		for _, name := range strings.Split(f[2], "/") {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
	}
	return false
}
