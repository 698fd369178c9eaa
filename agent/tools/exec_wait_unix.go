//go:build unix

package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// wait waits for the command to exit, to pass its timeout, to pass a disk
// bound, or for ctx to end; in the last three cases it stops the command.
func (x *execution) wait(ctx context.Context, timeout time.Duration) (execOutcome, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var o execOutcome
	select {
	case err := <-x.waited:
		return o, err
	case <-timer.C:
		o.timedOut = true
	case why := <-x.disk.hit:
		o.diskKill = why
	case <-ctx.Done():
		x.cancelled = true
	}
	return o, x.stop()
}

// stop kills a command that is still running. Under bubblewrap the
// namespace's first process goes first and bwrap, which reaps it, is
// awaited: once it exits the kernel has killed everything in the
// namespace. The group kill then covers bwrap itself, a namespace whose
// report never came, and the unsandboxed case.
func (x *execution) stop() error {
	if x.proc != nil {
		x.proc.Hold.detach() // a frozen process would not die
	}
	if init := x.ns.ready(); init != nil {
		init.kill()
		select {
		case err := <-x.waited:
			killGroup(x.pgid)
			return err
		case <-time.After(OutputDrainTimeout):
		}
	}
	killGroup(x.pgid)
	return <-x.waited
}

// reap ends whatever the command left behind and collects its outcome.
func (x *execution) reap(ctx context.Context, o execOutcome, waitErr error) (execOutcome, error) {
	if x.ns != nil {
		x.ns.end(x.infoR)
	}
	// Whatever the command left running in the background goes too: nothing
	// a call starts may outlive it (or race a later round). This also
	// closes the output pipe for every process still in the group.
	killGroup(x.pgid)
	x.finish() // the proxy and the cgroup end with the command
	x.drain()
	o.incomplete = x.copyErr != nil
	o.network, o.memoryKill = x.outcome.Network, x.outcome.String()
	o.output = x.buf.String(x.outputCap)
	if x.cancelled {
		// What it asked the proxy for is on record however it ended.
		return execOutcome{network: o.network}, ctx.Err()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return execOutcome{}, fmt.Errorf("run_command: waiting for %s: %w", x.name, waitErr)
	}
	ps := x.cmd.ProcessState
	o.exitCode = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// Report signals the way shells do (128+n) rather than Go's -1.
		o.exitCode = 128 + int(ws.Signal())
		o.signal = ws.Signal().String()
	}
	return o, nil
}

// startLifeline starts the watcher described at lifelineScript as the
// leader of a new process group, as cred (nil: as the worker), and returns
// it with the write end of its stdin pipe. It gets no Pdeathsig: it must
// outlive the worker to act.
func startLifeline(env []string, cred *syscall.Credential) (*exec.Cmd, *os.File, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating lifeline pipe: %w", err)
	}
	cmd := exec.Command("bash", "-c", lifelineScript)
	cmd.Env = env
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
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
