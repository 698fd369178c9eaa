package tools

import (
	"context"
	"errors"
	"io"
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
