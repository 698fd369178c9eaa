package temporalserver

import "syscall"

// sysProcAttr puts the server in its own process group (so Stop reaches
// everything it started) and has the kernel kill it when the process that
// started it dies, so a crashed test never leaves a server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
