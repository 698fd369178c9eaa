package gitws

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"

	"github.com/ralph-temporal/ralph/internal/cgroup"
)

// The worker's git runs as root outside the jail on trees the model wrote:
// every git process is held to a memory, a pids and a time bound
// (CommandTimeout) in a control group of its own, created and removed by
// run around the one command.
const (
	// SettingMemory names the memory bound of one git command.
	SettingMemory = "RALPH_GIT_MEMORY_MB"
	// DefaultMemoryMB is RALPH_GIT_MEMORY_MB's default: a clone, a
	// checkout or a merge of an ordinary repository takes tens of MB.
	DefaultMemoryMB = 1024
	// Pids bounds the processes and threads of one git command. git starts
	// a few helpers (ssh, a credential helper, index-pack) and runs at most
	// one thread per core in pack-objects, index-pack and checkout: 512
	// covers a 256-core host twice, and stops a runaway helper long before
	// it can starve the worker.
	Pids = 512
)

// bound is the control groups of one worker's git commands.
type bound struct {
	cg  *cgroup.Manager // nil: no bound holds (Why says why)
	why string
	mem int64
	// peak is the highest memory use a git command's group reported, for
	// the tests and the start line's benchmark.
	peak atomic.Int64
}

func newBound(memoryMB int) *bound {
	b := &bound{mem: int64(memoryMB) << 20}
	b.cg, b.why = cgroup.Detect(cgroup.Limits{MemoryBytes: b.mem, Pids: Pids})
	b.cg = b.cg.WithoutFreezer() // git commands are never frozen
	return b
}

// command returns the exec.Cmd of git args, started inside a new group of
// its own: in cgroup v2 the process is born inside (UseCgroupFD); in v1 a
// POSIX sh moves itself in and then execs git. The caller ends the group
// (end) after the command.
func (b *bound) command(ctx context.Context, args []string) (*exec.Cmd, *cgroup.Group, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if b == nil || b.cg == nil {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.SysProcAttr = attr
		return cmd, nil, nil
	}
	grp, err := b.cg.New()
	if err != nil {
		return nil, nil, fmt.Errorf("the git command's control group: %w", err)
	}
	name, argv := grp.Wrap("git", args)
	cmd := exec.CommandContext(ctx, name, argv...)
	if fd, ok := grp.FD(); ok {
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	}
	cmd.SysProcAttr = attr
	return cmd, grp, nil
}

// end records the group's peak memory and removes it; oom says the kernel
// killed a process of it for passing the memory bound.
func (b *bound) end(grp *cgroup.Group) (oom bool) {
	if grp == nil {
		return false
	}
	if p := grp.PeakBytes(); p > b.peak.Load() {
		b.peak.Store(p)
	}
	oom = grp.OOMKilled()
	grp.Close()
	return oom
}

// Bound says, for the start line, which bounds hold on every git command
// ("" when none: why then names the reason).
func (g *Git) Bound() (enforced, why string) {
	if g.bound == nil || g.bound.cg == nil {
		if g.bound == nil {
			return "", "git is off"
		}
		return "", g.bound.why
	}
	// Detect's reason also tells of a hierarchy it tried first (v2 in a
	// hybrid v1 host); it matters only when a bound is missing.
	enforced = g.bound.cg.Describe()
	if on := g.bound.cg.Enforced(); slices.Contains(on, cgroup.Memory) && slices.Contains(on, cgroup.Pids) {
		return enforced, ""
	}
	return enforced, g.bound.why
}

// PeakMemoryBytes is the highest memory use any git command of g reached
// (its group's peak; 0 without a memory bound).
func (g *Git) PeakMemoryBytes() int64 {
	if g.bound == nil {
		return 0
	}
	return g.bound.peak.Load()
}

// MemoryBoundError is a git command the kernel killed for passing
// RALPH_GIT_MEMORY_MB: the tree it worked on is the cause.
type MemoryBoundError struct {
	Args    string // the git command, credentials removed
	LimitMB int64
}

func (e *MemoryBoundError) Error() string {
	return fmt.Sprintf("git %s: killed for passing %s (%d MB)", e.Args, SettingMemory, e.LimitMB)
}
