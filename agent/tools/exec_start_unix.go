//go:build unix

package tools

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// start starts the command in the lifeline's group. Under bubblewrap, fd 3
// of bwrap reports the sandbox's first process: killing it ends the PID
// namespace and so every process of the command, detached or not, before
// the call returns; in proxy mode the worker then opens the proxy inside
// the command's network namespace, and bwrap runs the command only after.
func (x *execution) start(command string) error {
	sb := x.w.sb
	var infoW *os.File
	var extra []*os.File
	infoFD := -1
	if sb.Mode() == sandbox.ModeBwrap {
		var err error
		if x.infoR, infoW, err = os.Pipe(); err != nil {
			return fmt.Errorf("creating the sandbox info pipe: %w", err)
		}
		x.undo = append(x.undo, func() { x.infoR.Close() })
		infoFD = 3
		extra = append(extra, infoW)
	}
	extra = append(extra, x.run.Files()...)
	argv := []string{"bash", "-c", command}
	if x.proc != nil {
		argv = x.proc.Argv
	}
	name, args := sb.CommandFor(x.run, x.w.dir, x.home, infoFD, 3+len(extra)-len(x.run.Files()),
		sandbox.ReadOnly{Workspace: x.w.reviewOnly, Paths: x.w.readOnly}, argv)
	cmd := exec.Command(name, args...)
	cmd.Dir = x.w.dir
	cmd.Env = x.env()
	if x.proc != nil {
		cmd.Env, cmd.Stdin = append(cmd.Env, x.proc.Env...), x.proc.Stdin
	}
	cmd.ExtraFiles = extra
	// An *os.File is handed to the child as is: no copying goroutine inside
	// exec, so Wait returns as soon as bash exits, even if a grandchild still
	// holds the pipe. stdout and stderr share it to keep their interleaving.
	cmd.Stdout, cmd.Stderr = x.pw, x.pw
	cmd.SysProcAttr = commandSysProcAttr(x.pgid)
	x.run.SysProcAttr(cmd.SysProcAttr)
	x.cmd, x.name = cmd, name

	started := make(chan error, 1)
	x.waited = make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, not
		// the process. Go only ends a thread whose goroutine exits while
		// locked to it, so holding this thread until Wait returns keeps it
		// alive exactly as long as the child needs it. The thread is given
		// a session keyring of its own, which the command inherits instead
		// of the worker's; it is never unlocked, so Go ends it afterwards.
		runtime.LockOSThread()
		newSessionKeyring()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		x.waited <- cmd.Wait()
	}()
	err := <-started
	x.pw.Close() // the child has its copy; EOF comes once every holder is gone
	if infoW != nil {
		infoW.Close()
	}
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	x.run.Started()
	if x.infoR != nil {
		x.ns = watchNSInit(x.infoR, cmd.Process.Pid, x.run.Entered)
	}
	if x.proc != nil && x.proc.Hold != nil {
		x.proc.Hold.attach(x.holdProcess)
		x.undo = append(x.undo, x.proc.Hold.detach)
	}
	ownHome := ""
	if x.proc != nil {
		ownHome = x.proc.Home
	}
	x.disk = watchDisk(sb, x.w.dir, ownHome)
	x.undo = append(x.undo, x.disk.stop)
	return nil
}
