//go:build unix

package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// lifelineScript guards a command's process group from inside it. Its
// stdin is a pipe whose only write end is held by this process; when the
// worker dies (even by SIGKILL) the kernel closes that end, read sees EOF,
// and the whole group is killed. Pdeathsig alone would only take the direct
// child, not the compilers, test binaries and background jobs it started.
const lifelineScript = `while read -r _; do :; done; kill -KILL 0`

// execute runs command in a new process group and returns its capped output
// and exit status. The group is created by a lifeline watcher started first,
// so there is no moment at which the command runs unguarded. execute returns
// a Go error only when the harness fails or ctx is cancelled; in every case
// no process of the group is left running when it returns.
func (w *Workspace) execute(ctx context.Context, command string, timeout time.Duration, outputCap int) (execOutcome, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return execOutcome{}, fmt.Errorf("run_command: creating output pipe: %w", err)
	}
	defer pr.Close()
	buf := newHeadTailBuffer(outputCap)
	var copyErr error
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, copyErr = io.Copy(buf, pr)
	}()

	// The command's cgroup and proxy; finished once nothing of it runs.
	run, err := w.sb.Prepare()
	if err != nil {
		pw.Close()
		<-copied
		return execOutcome{}, fmt.Errorf("run_command: %w", err)
	}
	var outcome sandbox.Outcome
	finished := false
	finish := func() {
		if !finished {
			finished, outcome = true, run.Finish()
		}
	}
	defer finish()

	// Every process of the group, its leader included, gets the command's
	// allowlisted environment: the leader is dumpable and the same user,
	// so its /proc/<pid>/environ is readable by the command.
	env := w.sb.Env(os.Environ(), w.home)
	lifeline, lifelineW, err := startLifeline(env)
	if err != nil {
		pw.Close()
		<-copied
		return execOutcome{}, fmt.Errorf("run_command: starting process-group watcher: %w", err)
	}
	// The lifeline leads the group; it is reaped only after the last
	// killGroup, so the group id cannot be reused while it is signalled.
	pgid := lifeline.Process.Pid
	defer stopLifeline(lifeline, lifelineW)
	defer killGroup(pgid) // runs first: nothing of the group outlives the call

	// Under bubblewrap, fd 3 of bwrap reports the sandbox's first process:
	// killing it ends the PID namespace and so every process of the
	// command, detached or not, before the call returns.
	var infoR, infoW *os.File
	var extra []*os.File
	infoFD := -1
	if w.sb.Mode() == sandbox.ModeBwrap {
		if infoR, infoW, err = os.Pipe(); err != nil {
			pw.Close()
			<-copied
			return execOutcome{}, fmt.Errorf("run_command: creating the sandbox info pipe: %w", err)
		}
		defer infoR.Close()
		infoFD = 3
	}
	if infoW != nil {
		extra = append(extra, infoW)
	}
	extra = append(extra, run.Files()...)
	name, args := w.sb.CommandFor(run, w.dir, w.home, infoFD, 3+len(extra)-len(run.Files()),
		sandbox.ReadOnly{Workspace: w.reviewOnly, Paths: w.readOnly}, []string{"bash", "-c", command})
	cmd := exec.Command(name, args...)
	cmd.Dir = w.dir
	cmd.Env = env
	cmd.ExtraFiles = extra
	// An *os.File is handed to the child as is: no copying goroutine inside
	// exec, so Wait returns as soon as bash exits, even if a grandchild still
	// holds the pipe. stdout and stderr share it to keep their interleaving.
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = commandSysProcAttr(pgid)

	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, not
		// the process. Go only ends a thread whose goroutine exits while
		// locked to it, so holding this thread until Wait returns keeps it
		// alive exactly as long as the child needs it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		pw.Close()
		if infoW != nil {
			infoW.Close()
		}
		<-copied
		return execOutcome{}, fmt.Errorf("run_command: starting %s: %w", name, err)
	}
	pw.Close() // the child has its copy; EOF comes once every holder is gone
	run.Started()
	var ns *nsWatch
	if infoW != nil {
		infoW.Close()
		ns = watchNSInit(infoR, cmd.Process.Pid)
	}
	// stop kills a command that is still running. Under bubblewrap the
	// namespace's first process goes first and bwrap, which reaps it, is
	// awaited: once it exits the kernel has killed everything in the
	// namespace. The group kill then covers bwrap itself, a namespace whose
	// report never came, and the unsandboxed case.
	stop := func() error {
		if init := ns.ready(); init != nil {
			init.kill()
			select {
			case err := <-waited:
				killGroup(pgid)
				return err
			case <-time.After(OutputDrainTimeout):
			}
		}
		killGroup(pgid)
		return <-waited
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var o execOutcome
	var waitErr error
	cancelled := false
	select {
	case waitErr = <-waited:
	case <-timer.C:
		o.timedOut = true
		waitErr = stop()
	case <-ctx.Done():
		cancelled = true
		waitErr = stop()
	}
	if ns != nil {
		ns.end(infoR)
	}
	// Whatever the command left running in the background goes too: nothing
	// a call starts may outlive it (or race a later round). This also
	// closes the output pipe for every process still in the group.
	killGroup(pgid)

	finish() // the proxy and the cgroup end with the command

	// The group is dead, so EOF is normally immediate; the deadline only
	// matters for a process that escaped the group and holds the pipe.
	if err := pr.SetReadDeadline(time.Now().Add(OutputDrainTimeout)); err != nil {
		pr.Close()
	}
	<-copied
	o.incomplete = copyErr != nil
	o.network, o.memoryKill = outcome.Network, outcome.String()
	o.output = buf.String(outputCap)

	if cancelled {
		return execOutcome{}, ctx.Err()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return execOutcome{}, fmt.Errorf("run_command: waiting for %s: %w", name, waitErr)
	}
	o.exitCode = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// Report signals the way shells do (128+n) rather than Go's -1.
		o.exitCode = 128 + int(ws.Signal())
		o.signal = ws.Signal().String()
	}
	return o, nil
}

// startLifeline starts the watcher described at lifelineScript as the
// leader of a new process group and returns it with the write end of its
// stdin pipe. It gets no Pdeathsig: it must outlive the worker to act.
func startLifeline(env []string) (*exec.Cmd, *os.File, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating lifeline pipe: %w", err)
	}
	cmd := exec.Command("bash", "-c", lifelineScript)
	cmd.Env = env
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close() // only the watcher keeps the read end
	if err != nil {
		wr.Close()
		return nil, nil, err
	}
	return cmd, wr, nil
}

// stopLifeline reaps a watcher that is no longer needed. The group,
// watcher included, has been killed by then; killing it again covers a
// watcher that left the group. Closing the pipe last means it never gets
// to run its own kill.
func stopLifeline(cmd *exec.Cmd, wr *os.File) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	wr.Close()
}

// killGroup sends SIGKILL to every process in the group. ESRCH (the group
// is already gone) is the expected outcome after a clean exit.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
