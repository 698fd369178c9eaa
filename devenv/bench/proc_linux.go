package bench

import "syscall"

// childSysProcAttr: a worker started by the benchmark dies with it.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
