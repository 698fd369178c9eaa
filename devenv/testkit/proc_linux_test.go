//go:build linux

package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/cgroup"
	"github.com/ralph-temporal/ralph/internal/wait"
)

// A command in one of this process's command groups is listed as this
// worker's; one outside them, and everything for another pid, is not.
func TestProcessesOfWorkerSeesOnlyItsGroups(t *testing.T) {
	RequireCgroups(t)
	m, _ := cgroup.Detect(cgroup.Limits{MemoryBytes: 1 << 30, Pids: 100})
	g, err := m.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	name, args := g.Wrap("sleep", []string{"3077"})
	in, out := exec.Command(name, args...), exec.Command("sleep", "3078")
	if fd, ok := g.FD(); ok { // cgroup v2: born in the group
		in.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	for _, c := range []*exec.Cmd{in, out} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	}
	var found []string
	err = wait.For(context.Background(), 10*time.Second, 10*time.Millisecond, func(context.Context) error {
		if found = ProcessesOfWorker(os.Getpid()); !slices.Contains(found, fmt.Sprintf("%d: sleep 3077", in.Process.Pid)) {
			return errors.New("not in its group yet")
		}
		return nil
	})
	if err != nil || len(found) != 1 {
		t.Fatalf("this worker's processes: %q (%v), want only the grouped sleep %d", found, err, in.Process.Pid)
	}
	if other := ProcessesOfWorker(out.Process.Pid); len(other) > 0 {
		t.Errorf("another pid's groups list %q", other)
	}
}
