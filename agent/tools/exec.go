package tools

import (
	"context"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/toolcache"
)

// ExecResult is what one command run produced.
type ExecResult struct {
	// Output is stdout and stderr combined, head and tail kept within the cap.
	Output string
	// ExitCode is the command's exit status (128+n when killed by signal n).
	ExitCode int
	// TimedOut reports that the command ran past its timeout and was killed.
	TimedOut bool
	// Duration is how long the command ran.
	Duration time.Duration
	// MemoryKill says the command was killed for exceeding the memory limit
	// ("" when it was not); Output then starts with it too.
	MemoryKill string
	// DiskKill says which disk bound the command passed and was killed at
	// ("" when none); Output then starts with it too.
	DiskKill string
	// Network is every connection the command asked the sandbox's proxy for.
	Network []netproxy.Record
	// ToolCache is the private tool cache copy an ExecFreshHome command of a
	// workspace WithToolCache started from and wrote (nil otherwise): the
	// caller commits it (its tree landed) or removes it.
	ToolCache *toolcache.Copy
}

// Exec runs command the way run_command does (bash -c in the workspace, the
// same isolation, every process it started killed when it returns) with its
// output capped to outputCap code points. The round's own steps, such as the
// verify command, use it. A Go error means the harness failed or ctx ended.
func (w *Workspace) Exec(ctx context.Context, command string, timeout time.Duration, outputCap int) (ExecResult, error) {
	return w.exec(ctx, command, timeout, outputCap, false)
}

// ExecFreshHome is Exec with a HOME no command has written (made for this
// call, removed after it): what the model planted in its persistent home
// (a Go env file, .gitconfig, .npmrc) cannot change what the verify
// command runs.
func (w *Workspace) ExecFreshHome(ctx context.Context, command string, timeout time.Duration, outputCap int) (ExecResult, error) {
	return w.exec(ctx, command, timeout, outputCap, true)
}

func (w *Workspace) exec(ctx context.Context, command string, timeout time.Duration, outputCap int, freshHome bool) (ExecResult, error) {
	started := time.Now()
	var cache *toolcache.Copy
	if freshHome {
		// A verify command never starts on a workspace already past a disk
		// bound (section 38): it would be killed at the first check anyway,
		// after writing more.
		if why := w.sb.DiskOver(w.dir, ""); why != "" {
			why = "not started: " + strings.TrimPrefix(why, "killed: ")
			return ExecResult{Output: "[" + why + "]\n", ExitCode: -1, DiskKill: why}, nil
		}
		// A verify starts warm from its own copy of the line's cache,
		// never from what the model's commands wrote.
		if store := w.sb.ToolCaches(); store != nil && w.cacheLine != "" {
			var err error
			if cache, err = store.Checkout(w.cacheLine, ""); err != nil {
				return ExecResult{}, err
			}
		}
	}
	dir := ""
	if cache != nil {
		dir = cache.Dir
	}
	o, err := w.execute(ctx, command, timeout, outputCap, freshHome, dir)
	if err != nil {
		_ = cache.Remove()
		return ExecResult{}, err
	}
	// The command is over: its copy (kept to be committed or removed)
	// holds no mount from here on.
	if err := cache.Unmount(); err != nil {
		_ = cache.Remove()
		return ExecResult{}, err
	}
	out := o.output
	for _, kill := range []string{o.memoryKill, o.diskKill} {
		if kill != "" {
			out = "[" + kill + "]\n" + out
		}
	}
	return ExecResult{Output: out, ExitCode: o.exitCode, TimedOut: o.timedOut, Duration: time.Since(started),
		MemoryKill: o.memoryKill, DiskKill: o.diskKill, Network: o.network, ToolCache: cache}, nil
}
