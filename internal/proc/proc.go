// Package proc reads what this project needs of /proc: whether a process
// still runs (the tests and benchmarks that prove commands do not outlive a
// cancel, a timeout or a killed worker), its parent, CPU time and memory,
// and the list of processes. It is the one /proc parser.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/wait"
)

// Stat is what this project reads of /proc/<pid>/stat.
type Stat struct {
	State byte // R, S, D, Z (zombie), X (dead), …
	PPID  int
	// UTime and STime are the user and system CPU time in clock ticks
	// (USER_HZ, 100 a second on Linux).
	UTime, STime int64
}

// ClockTicks is USER_HZ: Stat's CPU times are counted in 1/ClockTicks s.
const ClockTicks = 100

// ReadStat parses /proc/<pid>/stat (pid 0: this process).
func ReadStat(pid int) (Stat, error) {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	// The fields are "pid (comm) state ppid …"; comm may hold spaces and
	// parentheses, so the rest follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("%s: no ')' in %q", path, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%s: %d fields after the command name", path, len(f))
	}
	st := Stat{State: f[0][0]}
	st.PPID, _ = strconv.Atoi(f[1])
	st.UTime, _ = strconv.ParseInt(f[11], 10, 64)
	st.STime, _ = strconv.ParseInt(f[12], 10, 64)
	return st, nil
}

// ReadStatus parses /proc/<pid>/status into its "Key:\tvalue" lines (pid
// 0: this process), values trimmed.
func ReadStatus(pid int) (map[string]string, error) {
	path := "/proc/self/status"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// PIDs lists the processes in /proc, in ascending order.
func PIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// Cmdline is the process's command line, its arguments joined by spaces.
func Cmdline(pid int) (string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " ")), err
}

// Matching lists the running processes whose command line contains marker.
func Matching(marker string) []int {
	pids, _ := PIDs()
	var out []int
	for _, pid := range pids {
		if line, err := Cmdline(pid); err == nil && strings.Contains(line, marker) && Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// Alive reports whether pid is a running process. A zombie (exited, not yet
// reaped) counts as gone: it runs no code. Where /proc is missing, only
// kill(pid, 0) is asked, so a zombie counts as alive there.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := ReadStat(pid)
	if err != nil {
		_, statErr := os.Stat("/proc/self/stat")
		return statErr != nil // no /proc at all: trust kill(0)
	}
	return st.State != 'Z' && st.State != 'X'
}

// WaitGone waits up to within until none of pids runs (a zombie counts as
// gone), and returns the ones still running then (nil when all are gone).
func WaitGone(ctx context.Context, within time.Duration, pids ...int) []int {
	var alive []int
	_ = wait.For(ctx, within, 20*time.Millisecond, func(context.Context) error {
		alive = alive[:0]
		for _, pid := range pids {
			if Alive(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) > 0 {
			return fmt.Errorf("%v still run", alive)
		}
		return nil
	})
	if len(alive) == 0 {
		return nil
	}
	return alive
}
