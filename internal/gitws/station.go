package gitws

import (
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"syscall"

	"github.com/ralph-temporal/ralph/internal/cgroup"
)

// On cgroup v1 a command is born in its groups when the thread forking it
// is in them, and a thread moves between groups by writing its id to a
// tasks file: a write that waits for an RCU grace period whenever no other
// move happened lately, and every command moved twice (in, then back). On
// the demo merge that path cost about 13 ms of its 80-110 ms (A/B runs of
// BenchmarkQueueCostDemoJailed, 2026-12-06; with no cgroup at all, 17).
// A station is a group with one of the worker's threads living in it for
// good: the thread forks one command at a time, so each command is still
// alone in its groups with its own limits, and no thread moves per command.
// Between two commands the group is checked idle and its peak and OOM count
// reset (cgroup.Group.Reset); a group that is not idle is removed, what is
// left in it killed. The group is reused, never removed per command, so no
// dying memory group piles up either.
type station struct {
	grp     *cgroup.Group
	tid     atomic.Int32 // the thread living in grp, for the tests
	start   chan *exec.Cmd
	started chan error
}

// newStation starts a thread in grp's groups (never the main thread, whose
// groups are the process's: cgroup.Group.Enter refuses it).
func newStation(grp *cgroup.Group) (*station, error) {
	st := &station{grp: grp, start: make(chan *exec.Cmd), started: make(chan error)}
	entered := make(chan error, 1)
	go st.serve(entered)
	if err := <-entered; err != nil {
		return nil, err
	}
	return st, nil
}

// serve enters the station's groups and starts each command sent to it
// until the station ends; the thread is never unlocked, so it ends with
// serve and leaves the groups then.
func (st *station) serve(entered chan<- error) {
	runtime.LockOSThread()
	if syscall.Gettid() == os.Getpid() {
		// Holding the main thread meanwhile, the inner serve runs on another.
		inner := make(chan error, 1)
		go st.serve(inner)
		err := <-inner
		runtime.UnlockOSThread()
		entered <- err
		return
	}
	if _, err := st.grp.Enter(); err != nil {
		entered <- err
		return
	}
	st.tid.Store(int32(syscall.Gettid()))
	entered <- nil
	for cmd := range st.start {
		st.started <- cmd.Start()
	}
}

// run starts cmd on the station's thread (its parent for Pdeathsig, alive
// until the station ends, which is never before the command's end) and
// waits for it.
func (st *station) run(cmd *exec.Cmd) error {
	st.start <- cmd
	if err := <-st.started; err != nil {
		return err
	}
	return cmd.Wait()
}

// end ends the thread and removes the groups, killing what is left.
func (st *station) end() {
	close(st.start)
	st.grp.Close() // retries until the thread has left
}

// stationCharge: a station whose group holds more than 1/stationCharge of
// the memory bound is ended after its command. Page cache a command read
// or wrote stays charged to the group; past the bound the kernel reclaims
// it inside the group, on the next command's time (the 100 MB benchmark
// repository's merges filled a 1 GB group in a few steps).
const stationCharge = 4

// idleStations is how many stations wait between commands per bound; more
// at once (commands running side by side) are ended after their command.
const idleStations = readyGroups

// takeStation returns the station that waited least (its group's cache is
// the warmest, and commands one after another keep to one station), or a
// new one on a fresh group.
func (p *groupPool) takeStation() (*station, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		st := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return st, nil
	}
	p.mu.Unlock()
	grp, err := p.take()
	if err != nil {
		return nil, err
	}
	st, err := newStation(grp)
	if err != nil {
		grp.Close()
		return nil, err
	}
	return st, nil
}

// keepStation keeps st for the next command when it is fit for one: its
// groups idle (no process left in them), holding under 1/stationCharge of
// the memory bound, and reset. False: the caller ends it.
func (p *groupPool) keepStation(st *station) bool {
	if !st.grp.Idle() || st.grp.UsageBytes() >= p.mem/stationCharge || st.grp.Reset() != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= idleStations {
		return false
	}
	p.idle = append(p.idle, st)
	return true
}
