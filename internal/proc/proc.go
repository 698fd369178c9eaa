// Package proc answers whether a process still runs, for the tests and
// benchmarks that prove commands do not outlive a cancel, a timeout or a
// killed worker.
package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

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
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		_, statErr := os.Stat("/proc/self/stat")
		return statErr != nil // no /proc at all: trust kill(0)
	}
	// The fields are "pid (comm) state ..."; comm may hold spaces and
	// parentheses, so the state follows the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}
