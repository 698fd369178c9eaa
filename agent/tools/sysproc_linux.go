//go:build linux

package tools

import (
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/proc"
	"golang.org/x/sys/unix"
)

// commandSysProcAttr puts the command into the lifeline's process group
// pgid and has the kernel kill it if the worker dies. Pdeathsig reaches
// only this process; the lifeline takes care of its descendants.
func commandSysProcAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
}

// nsInit is a pidfd on the first process of a command's PID namespace.
type nsInit struct{ fd int }

// openNSInit opens a pidfd on pid and keeps it only if pid is still the
// child of bwrap: the pidfd then names that very process even if it exits
// and its pid is reused.
func openNSInit(pid, bwrapPid int) *nsInit {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	if parentPID(pid) != bwrapPid {
		unix.Close(fd)
		return nil
	}
	return &nsInit{fd: fd}
}

// kill ends the namespace: the kernel kills every process in it when its
// first process dies.
func (n *nsInit) kill() { _ = unix.PidfdSendSignal(n.fd, unix.SIGKILL, nil, 0) }

func (n *nsInit) close() { _ = unix.Close(n.fd) }

// pidfd is the descriptor (-1 for a nil nsInit).
func (n *nsInit) pidfd() int {
	if n == nil {
		return -1
	}
	return n.fd
}

// newSessionKeyring gives the calling thread (locked to its goroutine, and
// never reused) a new anonymous session keyring: what it starts does not
// possess the worker's. A kernel without keyrings has nothing to inherit.
func newSessionKeyring() {
	_, _, _ = unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
}

// awaitExit waits up to d for the process to exit: a pidfd turns readable
// then. The namespace's first process exits only after the kernel has
// killed and reaped every other process in it.
func (n *nsInit) awaitExit(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		fds := []unix.PollFd{{Fd: int32(n.fd), Events: unix.POLLIN}}
		_, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err != unix.EINTR {
			return
		}
	}
}

// parentPID is the parent of pid (0 when it is gone).
func parentPID(pid int) int {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.PPID
}
