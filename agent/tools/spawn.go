package tools

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Process is a program run in the workspace with the isolation of
// run_command (the sandbox, its uid, limits and proxy; every process it
// starts killed when the call returns), for an agent provider's CLI.
type Process struct {
	// Argv is the program and its arguments (found on the sandbox's PATH).
	Argv []string
	// Env is added to the allowlisted command environment.
	Env []string
	// Stdin is the program's standard input (nil: none).
	Stdin io.Reader
	// Output receives stdout and stderr as they come, besides the capped
	// copy in the result (nil: only that).
	Output io.Writer
	// Home is the program's HOME ("": the workspace's private one).
	Home string
	// Hold, when set, can stop every process of the program while it runs
	// (the worker checking what the program handed it).
	Hold *Hold
}

// Hold stops a spawned program's processes and lets them go on. Freezes
// nest: the processes run again once every Freeze has had its Thaw.
type Hold struct {
	mu     sync.Mutex
	n      int
	freeze func() (thaw func(), err error) // nil: nothing running
	thaw   func()
}

// Freeze returns once no process of the program runs (at once when none
// is running). An error means they could not be stopped; Thaw must not
// follow it.
func (h *Hold) Freeze() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 && h.freeze != nil {
		thaw, err := h.freeze()
		if err != nil {
			return err
		}
		h.thaw = thaw
	}
	h.n++
	return nil
}

// Thaw undoes one Freeze.
func (h *Hold) Thaw() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n--; h.n == 0 && h.thaw != nil {
		h.thaw()
		h.thaw = nil
	}
}

// attach is told how to stop the running program; detach that it is
// ending (what it froze runs again, so a kill can take it).
func (h *Hold) attach(freeze func() (func(), error)) {
	if h != nil {
		h.mu.Lock()
		h.freeze = freeze
		h.mu.Unlock()
	}
}

func (h *Hold) detach() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.freeze = nil
	if h.thaw != nil {
		h.thaw()
		h.thaw = nil
	}
}

// Spawn runs p until it exits, passes timeout or ctx ends (then it is
// killed with everything it started). A Go error means the harness failed
// or ctx ended (the result then holds only the connections p asked the
// proxy for: a caller stops p by ending ctx); the program's own failure is
// in the result.
func (w *Workspace) Spawn(ctx context.Context, p Process, timeout time.Duration, outputCap int) (ExecResult, error) {
	if len(p.Argv) == 0 {
		return ExecResult{}, errors.New("spawn: no program given")
	}
	started := time.Now()
	o, err := w.spawn(ctx, p, timeout, outputCap)
	if err != nil {
		return ExecResult{Network: o.network}, err
	}
	return ExecResult{Output: o.output, ExitCode: o.exitCode, TimedOut: o.timedOut, Duration: time.Since(started),
		MemoryKill: o.memoryKill, DiskKill: o.diskKill, Network: o.network}, nil
}

// Sandbox is the sandbox the workspace's commands run in (nil: none).
func (w *Workspace) Sandbox() *sandbox.Sandbox { return w.sb }
