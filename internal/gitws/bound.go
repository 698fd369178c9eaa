package gitws

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/cgroup"
	"github.com/ralph-temporal/ralph/internal/deathsig"
)

// The worker's git runs as root outside the jail on trees the model wrote:
// every git process is held to a memory, a pids and a time bound
// (CommandTimeout) in a control group that holds that one command alone
// while it runs (made for it, or a station's: station.go).
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
	// it can starve the worker. On cgroup v1 the station's thread is one.
	Pids = 512
)

// bound is the control groups of one worker's git commands.
type bound struct {
	cg  *cgroup.Manager // nil: no bound holds (Why says why)
	why string
	mem int64
	// stations: on cgroup v1 a command is started by a station's thread
	// living in its groups (station.go) instead of a sh moving itself in
	// (Wrap); off where the first station at start or a later one failed.
	stations atomic.Bool
	// peak is the highest memory use a git command's group reported, for
	// the tests and the start line's benchmark.
	peak atomic.Int64
	// pool makes the groups ahead and keeps the idle stations; ending
	// counts the groups being read and removed after their command returned.
	pool   *groupPool
	ending atomic.Int64
}

func newBound(memoryMB int) *bound {
	b := &bound{mem: int64(memoryMB) << 20}
	b.cg, b.why = cgroup.Detect(cgroup.Limits{MemoryBytes: b.mem, Pids: Pids})
	b.cg = b.cg.WithoutFreezer() // git commands are never frozen
	if b.cg == nil {
		return b
	}
	b.pool = poolFor(b.cg, b.mem)
	if b.cg.Version() == 1 {
		// The first station is the probe, kept for the first command.
		if st, err := b.pool.takeStation(); err == nil {
			b.stations.Store(true)
			if !b.pool.keepStation(st) {
				st.end()
			}
		}
	}
	return b
}

// cmdGroup is a git command's group and how the command gets in.
type cmdGroup struct {
	*cgroup.Group
	st *station // cgroup v1: the station starting the command, nil otherwise
}

// command returns the exec.Cmd of git args, to be started by run inside a
// group that holds it alone: in cgroup v2 a new group the process is born
// in (UseCgroupFD); in v1 a station's, whose thread forks it there, or else
// a new group a POSIX sh moves itself into before it execs git. The caller
// ends the group (end) after the command.
func (b *bound) command(ctx context.Context, args []string) (*exec.Cmd, cmdGroup, error) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.SysProcAttr = attr
	if b == nil || b.cg == nil {
		return cmd, cmdGroup{}, nil
	}
	if b.stations.Load() {
		st, err := b.pool.takeStation()
		if err == nil {
			return cmd, cmdGroup{Group: st.grp, st: st}, nil
		}
		// The thread could not enter a group: this and later commands
		// are wrapped.
		b.stations.Store(false)
	}
	grp, err := b.pool.take()
	if err != nil {
		return nil, cmdGroup{}, fmt.Errorf("the git command's control group: %w", err)
	}
	if fd, v2 := grp.FD(); v2 {
		attr.UseCgroupFD, attr.CgroupFD = true, fd
	} else {
		name, argv := grp.Wrap("git", args)
		cmd = exec.CommandContext(ctx, name, argv...)
		cmd.SysProcAttr = attr
	}
	return cmd, cmdGroup{Group: grp}, nil
}

// run runs cmd, made by command with grp, to its end: started by grp's
// station, or on a thread of its own (deathsig).
func (b *bound) run(cmd *exec.Cmd, grp cmdGroup) error {
	if grp.st != nil {
		return grp.st.run(cmd)
	}
	return deathsig.Run(cmd.Run)
}

// end says whether the kernel killed a process of the group for passing
// the memory bound (asked only of a command that failed) and records the
// group's peak. A station fit for another command is kept at once (the
// next command takes it); any other group is removed after the command's
// return, whatever is left in it killed.
func (b *bound) end(grp cmdGroup, failed bool) (oom bool) {
	if grp.Group == nil {
		return false
	}
	if failed {
		oom = grp.OOMKilled()
	}
	if grp.st != nil {
		b.notePeak(grp.PeakBytes())
		if b.pool.keepStation(grp.st) {
			return oom
		}
	}
	b.ending.Add(1)
	go func() {
		defer b.ending.Add(-1)
		if grp.st != nil {
			grp.st.end()
			return
		}
		b.notePeak(grp.PeakBytes())
		grp.Close()
	}()
	return oom
}

// notePeak raises the bound's peak to p.
func (b *bound) notePeak(p int64) {
	for {
		old := b.peak.Load()
		if p <= old || b.peak.CompareAndSwap(old, p) {
			return
		}
	}
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
	// The groups of the commands that returned are read within moments;
	// a command still running may start more, which the wait gives up on.
	for deadline := time.Now().Add(10 * time.Second); g.bound.ending.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
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
