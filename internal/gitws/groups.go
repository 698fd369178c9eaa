package gitws

import (
	"sync"

	"github.com/ralph-temporal/ralph/internal/cgroup"
)

// Making a command's control groups (a mkdir and limit files in each
// hierarchy) and removing them took about 3.5 ms of the worker's CPU per
// demo merge on the command's path (SPEC 41, the queue's own cost). Groups
// are now made ahead, a few at a time: on cgroup v2 each serves one command
// and is removed after it returned; on v1 each becomes a station's
// (station.go), reused command after command.

// readyGroups is how many groups wait made ahead on cgroup v2: a merge
// runs its git commands one after another, each in a new group, so a few
// cover the gaps the filler needs. On v1 a group is taken only for a new
// station (commands side by side), so one waits.
const readyGroups = 4

func readyFor(m *cgroup.Manager) int {
	if m.Version() == 1 {
		return 1
	}
	return readyGroups
}

// groupPool holds groups made ahead for the commands of every Git of the
// process with the same bound, and on cgroup v1 its idle stations (one pool
// per memory bound, so a test that makes many Gits leaves at most that many
// unused groups per bound; a later worker's Detect removes them once this
// process is gone).
type groupPool struct {
	cg    *cgroup.Manager
	mem   int64 // the memory bound of its groups
	ready chan *cgroup.Group
	wake  chan struct{}
	// idle stations wait for the next command, the last kept on top
	// (cgroup v1: station.go).
	mu   sync.Mutex
	idle []*station
}

var groupPools sync.Map // memory bound in bytes → *groupPool

func poolFor(m *cgroup.Manager, mem int64) *groupPool {
	if p, ok := groupPools.Load(mem); ok {
		return p.(*groupPool)
	}
	p := &groupPool{cg: m, mem: mem, ready: make(chan *cgroup.Group, readyFor(m)), wake: make(chan struct{}, 1)}
	if got, loaded := groupPools.LoadOrStore(mem, p); loaded {
		return got.(*groupPool)
	}
	go p.fill()
	return p
}

// take returns a fresh group: one made ahead, else one made now (the
// error then is the command's).
func (p *groupPool) take() (*cgroup.Group, error) {
	defer p.nudge()
	select {
	case g := <-p.ready:
		return g, nil
	default:
		return p.cg.New()
	}
}

func (p *groupPool) nudge() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// fill makes groups until readyGroups wait, each time it is woken; only it
// sends on ready, so a send never blocks. A failure leaves the rest to take.
func (p *groupPool) fill() {
	for range p.wake {
		for len(p.ready) < cap(p.ready) {
			g, err := p.cg.New()
			if err != nil {
				break
			}
			p.ready <- g
		}
	}
}
