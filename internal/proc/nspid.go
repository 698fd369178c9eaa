package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// HostPID finds the process a command knows as pid, as this process sees
// it. Inside a sandbox's PID namespace `echo $$` prints the namespace's
// numbering, so the process is the one whose innermost pid (the last field
// of NSpid in /proc/<pid>/status) is pid and whose working directory is cwd
// (the command's workspace). Without a namespace that is pid itself.
func HostPID(pid int, cwd string) (int, error) {
	pids, err := PIDs()
	if err != nil {
		return 0, fmt.Errorf("finding pid %d in %s: %w", pid, cwd, err)
	}
	var found []int
	for _, host := range pids {
		if innermostPID(host) != pid {
			continue
		}
		if dir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", host)); err == nil && dir == cwd {
			found = append(found, host)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("finding pid %d in %s: %d processes match (%v)", pid, cwd, len(found), found)
	}
	return found[0], nil
}

// innermostPID is the last NSpid field of host, or host where the kernel
// does not report NSpid; 0 when the process is gone.
func innermostPID(host int) int {
	status, err := ReadStatus(host)
	if err != nil {
		return 0
	}
	nspid, ok := status["NSpid"]
	if !ok {
		return host
	}
	f := strings.Fields(nspid)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}
