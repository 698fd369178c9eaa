package temporalserver

// The one process runner of the servers here (the Temporal dev server,
// PostgreSQL, the Temporal server): each in its own process group, killed by
// the kernel if the process that started it dies, with the tail of its
// output kept for error messages.

import (
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/deathsig"
)

// TailBytes is how much of a server's output is kept for error messages.
const TailBytes = 64 << 10

// Process is one started server.
type Process struct {
	name string
	cmd  *exec.Cmd
	tail *Tail
	done chan struct{} // closed once cmd has exited

	mu   sync.Mutex
	werr error // cmd.Wait's result
}

// StartProcess starts cmd as a server named name (for messages). Its stdout and
// stderr go to the kept tail and to output (when not nil); cmd's
// SysProcAttr gains its own process group and a parent-death signal, and
// keeps a Credential that is already set.
func StartProcess(name string, cmd *exec.Cmd, output io.Writer) (*Process, error) {
	p := &Process{name: name, cmd: cmd, tail: NewTail(TailBytes), done: make(chan struct{})}
	var out io.Writer = p.tail
	if output != nil {
		out = io.MultiWriter(p.tail, output)
	}
	cmd.Stdout, cmd.Stderr = out, out
	var cred *syscall.Credential
	if cmd.SysProcAttr != nil {
		cred = cmd.SysProcAttr.Credential
	}
	cmd.SysProcAttr = sysProcAttr()
	cmd.SysProcAttr.Credential = cred
	err := deathsig.Go(cmd.Start, func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.werr = err
		p.mu.Unlock()
		close(p.done)
	})
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, cmd.Path, err)
	}
	return p, nil
}

// Pid is the server's process id (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitErr is the process's exit status once it has exited.
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}

// Output is the tail of what the process wrote.
func (p *Process) Output() string { return p.tail.String() }

// Stop sends sig to the process group and waits up to grace; then SIGKILL.
// It is safe to call on a process that has already exited.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) error {
	if p.signalAndWait(sig, grace) {
		return nil
	}
	return p.Kill()
}

// Kill ends the process group at once, as a crash would, and waits for it.
func (p *Process) Kill() error {
	if p.signalAndWait(syscall.SIGKILL, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.Pid())
}

// signalAndWait signals the group unless the process has exited, and
// reports whether it is gone within wait.
func (p *Process) signalAndWait(sig syscall.Signal, wait time.Duration) bool {
	if p.Exited() {
		return true
	}
	_ = syscall.Kill(-p.Pid(), sig)
	select {
	case <-p.done:
		return true
	case <-time.After(wait):
		return false
	}
}

// LivePID is the process id while the process runs, 0 otherwise (also for a
// nil process: a server not started yet).
func (p *Process) LivePID() int {
	if p == nil || p.Exited() {
		return 0
	}
	return p.Pid()
}

// Tail is the kept output, "" for a nil process.
func (p *Process) Tail() string {
	if p == nil {
		return ""
	}
	return p.Output()
}
