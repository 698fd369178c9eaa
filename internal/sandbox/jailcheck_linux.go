package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/ralph-temporal/ralph/internal/proc"
	"golang.org/x/sys/unix"
)

// jailCheckArg marks the worker's binary started inside the sandbox by the
// start-up probe (see init); jailFailPrefix starts its word on a failed check.
const (
	jailCheckArg   = "__ralph-sandbox-jail-check"
	jailFailPrefix = "jail check: "
)

func init() {
	if len(os.Args) > 2 && os.Args[1] == jailCheckArg {
		os.Exit(jailCheck(os.Args[2]))
	}
}

// jailCheck tries, from inside the sandbox, what a command must not be
// able to do, and names the first that worked. workerKeyring is the
// worker's session keyring id.
func jailCheck(workerKeyring string) int {
	fail := func(format string, a ...any) int {
		fmt.Printf(jailFailPrefix+format+"\n", a...)
		return 1
	}
	if os.Geteuid() == 0 {
		return fail("commands run with euid 0")
	}
	for _, f := range []string{"/proc/sys/kernel/core_pattern", "/proc/sys/vm/swappiness"} {
		if fd, err := unix.Open(f, unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
			return fail("%s is writable", f)
		}
	}
	// A child in a new user namespace: clone with CLONE_NEWUSER.
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Start(); err == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fail("a user namespace can be created")
	}
	if err := unix.Mount("none", "/tmp", "tmpfs", 0, ""); err == nil {
		return fail("a file system can be mounted")
	}
	id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	if err == nil && strconv.Itoa(id) == workerKeyring {
		return fail("the worker's session keyring %d is reachable", id)
	}
	if err == nil || !errors.Is(err, unix.EPERM) {
		return fail("keyctl is not refused (%v)", err)
	}
	return 0
}

// probeNSInit reads bwrap's report on r and opens a pidfd on the reported
// process if it is bwrap's child (-1 otherwise).
func probeNSInit(r *os.File, bwrapPid int) int {
	pid, err := InitPID(r)
	if err != nil {
		return -1
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	if st, err := proc.ReadStat(pid); err != nil || st.PPID != bwrapPid {
		unix.Close(fd)
		return -1
	}
	return fd
}

// sessionKeyring is this process's session keyring id (0 when it has none).
func sessionKeyring() int {
	id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	if err != nil {
		return 0
	}
	return id
}
