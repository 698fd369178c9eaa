//go:build unix && !linux

package temporalserver

import "syscall"

// sysProcAttr puts the server in its own process group so Stop reaches
// everything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
