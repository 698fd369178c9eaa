//go:build unix

package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// lifelineScript guards a command's process group from inside it. Its
// stdin is a pipe whose only write end is held by this process; when the
// worker dies (even by SIGKILL) the kernel closes that end, read sees EOF,
// and the whole group is killed. Pdeathsig alone would only take the direct
// child, not the compilers, test binaries and background jobs it started.
const lifelineScript = `while read -r _; do :; done; kill -KILL 0`

// execution is one command from its preparation to its reaping; execute
// runs its steps in order and undo releases what they set up.
type execution struct {
	w         *Workspace
	outputCap int
	home      string
	cacheDir  string   // the tool cache copy the command sees ("" none)
	undo      []func() // run last first

	pr, pw  *os.File // the command's output
	buf     *headTailBuffer
	copyErr error
	copied  chan struct{}

	run     *sandbox.Run
	outcome sandbox.Outcome
	done    bool // run finished

	pgid   int
	infoR  *os.File // bwrap's report of the namespace's first process
	cmd    *exec.Cmd
	name   string
	waited chan error
	ns     *nsWatch
	disk   *diskWatch

	cancelled bool // ctx ended before the command did

	proc *Process // a program other than bash -c (Spawn); nil for commands
}

// execute runs command in a new process group and returns its capped output
// and exit status. The group is created by a lifeline watcher started first,
// so there is no moment at which the command runs unguarded. execute returns
// a Go error only when the harness fails or ctx is cancelled; in every case
// no process of the group is left running when it returns. freshHome runs
// it with a HOME no command wrote (verification, the reviewer).
func (w *Workspace) execute(ctx context.Context, command string, timeout time.Duration, outputCap int, freshHome bool, cacheDir string) (execOutcome, error) {
	x := &execution{w: w, outputCap: outputCap, home: w.home, cacheDir: cacheDir}
	if cacheDir == "" && !freshHome && !w.reviewOnly {
		x.cacheDir = w.cacheDir // the model's own copy, kept between rounds
	}
	defer x.release()
	if err := x.prepare(freshHome); err != nil {
		return execOutcome{}, fmt.Errorf("run_command: %w", err)
	}
	if wait := time.Until(w.startAfter); wait > 0 {
		time.Sleep(wait) // bounded by its setter: a clock tick
	}
	if err := x.start(command); err != nil {
		return execOutcome{}, fmt.Errorf("run_command: %w", err)
	}
	o, waitErr := x.wait(ctx, timeout)
	return x.reap(ctx, o, waitErr)
}

func (x *execution) release() {
	for i := len(x.undo) - 1; i >= 0; i-- {
		x.undo[i]()
	}
}

// prepare sets up everything the command needs before it starts: its
// HOME, the workspace given to the commands' uid, the output pipe, its
// cgroup and proxy, and the lifeline that leads its process group.
func (x *execution) prepare(freshHome bool) error {
	sb := x.w.sb
	if x.proc != nil && x.proc.Home != "" {
		x.home = x.proc.Home
	} else if freshHome || x.w.reviewOnly {
		home, remove, err := sb.FreshHome()
		if err != nil {
			return err
		}
		x.undo = append(x.undo, remove)
		if home != "" {
			x.home = home
		}
	}
	if err := sb.Own(x.w.dir); err != nil {
		return err
	}
	var err error
	if x.pr, x.pw, err = os.Pipe(); err != nil {
		return fmt.Errorf("creating output pipe: %w", err)
	}
	x.undo = append(x.undo, func() { x.pr.Close(); x.pw.Close() })
	x.buf = newHeadTailBuffer(x.outputCap)
	x.copied = make(chan struct{})
	go func() {
		defer close(x.copied)
		var out io.Writer = x.buf
		if x.proc != nil && x.proc.Output != nil {
			out = io.MultiWriter(x.buf, x.proc.Output)
		}
		_, x.copyErr = io.Copy(out, x.pr)
	}()
	// Whatever happens next, the copy must end before execute returns.
	x.undo = append(x.undo, func() { x.pw.Close(); x.drain() })
	// The command's cgroup and proxy; finished once nothing of it runs.
	if x.run, err = sb.Prepare(); err != nil {
		return err
	}
	x.run.UseToolCache(x.cacheDir)
	x.undo = append(x.undo, x.finish)
	// Every process of the group, its leader included, gets the command's
	// allowlisted environment and uid: the leader is dumpable and the same
	// user, so its /proc/<pid>/environ is readable by the command.
	lifeline, lifelineW, err := startLifeline(x.env(), sb.Credential())
	if err != nil {
		return fmt.Errorf("starting process-group watcher: %w", err)
	}
	// The lifeline leads the group; it is reaped only after the last
	// killGroup, so the group id cannot be reused while it is signalled.
	x.pgid = lifeline.Process.Pid
	x.undo = append(x.undo, func() { stopLifeline(lifeline, lifelineW) }, func() { killGroup(x.pgid) })
	return nil
}

// env is the command's environment: the sandbox's, pointed at its tool
// cache copy when it has one.
func (x *execution) env() []string {
	env := x.w.sb.Env(os.Environ(), x.home)
	if x.cacheDir != "" {
		env = append(env, x.w.sb.ToolCacheEnv(x.cacheDir)...)
	}
	return env
}

// finish ends the command's proxy and cgroup, once.
func (x *execution) finish() {
	if !x.done {
		x.done, x.outcome = true, x.run.Finish()
	}
}

// drain waits for the output copy: the group is dead, so EOF is normally
// immediate; the deadline only matters for a process that escaped the
// group and holds the pipe.
func (x *execution) drain() {
	if err := x.pr.SetReadDeadline(time.Now().Add(OutputDrainTimeout)); err != nil {
		x.pr.Close()
	}
	<-x.copied
}

// spawn is execute for a Process.
func (w *Workspace) spawn(ctx context.Context, p Process, timeout time.Duration, outputCap int) (execOutcome, error) {
	x := &execution{w: w, outputCap: outputCap, home: w.home, proc: &p}
	if !w.reviewOnly {
		// An agent CLI's own commands, like run_command's, start from the
		// model's copy of the line's warm caches (a task's first round
		// starts warm whatever the provider); no verify reads that copy.
		x.cacheDir = w.cacheDir
	}
	defer x.release()
	if err := x.prepare(false); err != nil {
		return execOutcome{}, fmt.Errorf("spawn %s: %w", p.Argv[0], err)
	}
	if err := x.start(""); err != nil {
		return execOutcome{}, fmt.Errorf("spawn %s: %w", p.Argv[0], err)
	}
	o, waitErr := x.wait(ctx, timeout)
	return x.reap(ctx, o, waitErr)
}
