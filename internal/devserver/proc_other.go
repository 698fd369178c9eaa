//go:build unix && !linux

package devserver

import "syscall"

// sysProcAttr puts the server in its own process group so Stop reaches
// everything it started.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}
