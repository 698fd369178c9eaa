//go:build linux

package tools

import "syscall"

// commandSysProcAttr puts the command into the lifeline's process group
// pgid and has the kernel kill it if the worker dies. Pdeathsig reaches
// only this process; the lifeline takes care of its descendants.
func commandSysProcAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
}
