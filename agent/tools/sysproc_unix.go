//go:build unix && !linux

package tools

import (
	"syscall"
	"time"
)

// commandSysProcAttr puts the command into the lifeline's process group
// pgid. There is no Pdeathsig outside Linux; the lifeline alone ties the
// group to the worker.
func commandSysProcAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
}

// nsInit exists only on Linux, the one platform with bubblewrap.
type nsInit struct{}

func openNSInit(pid, bwrapPid int) *nsInit { return nil }

func (n *nsInit) kill()      {}
func (n *nsInit) close()     {}
func (n *nsInit) pidfd() int { return -1 }

// newSessionKeyring: keyrings exist only on Linux.
func newSessionKeyring()                  {}
func (n *nsInit) awaitExit(time.Duration) {}
