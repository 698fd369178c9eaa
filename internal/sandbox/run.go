package sandbox

import (
	"fmt"
	"os"

	"github.com/ralph-temporal/ralph/internal/cgroup"
	"github.com/ralph-temporal/ralph/internal/netproxy"
)

// Run is what one command gets beyond its mounts: its cgroup and, in proxy
// mode, its proxy. A nil *Run adds nothing.
type Run struct {
	cg   *cgroup.Group
	link *netproxy.Link
	mem  int64
}

// Outcome is what a finished command's Run observed.
type Outcome struct {
	// Network is every connection the command asked the proxy for.
	Network []netproxy.Record
	// OOMKilled: the kernel killed a process of the command for exceeding
	// the memory limit (MemoryMB).
	OOMKilled bool
	MemoryMB  int64
}

// Prepare sets up one command's cgroup and proxy. Finish must follow.
func (s *Sandbox) Prepare() (*Run, error) {
	if s == nil {
		return nil, nil
	}
	r := &Run{mem: s.limits.MemoryBytes >> 20}
	var err error
	if r.cg, err = s.cg.New(); err != nil {
		return nil, err
	}
	if s.Network() == NetProxy {
		if r.link, err = netproxy.NewLink(s.allow); err != nil {
			r.cg.Close()
			return nil, err
		}
	}
	return r, nil
}

// Files are the descriptors the command's process must inherit right after
// the ones given to CommandFor as firstFD-3 (in this order).
func (r *Run) Files() []*os.File {
	if r == nil || r.link == nil {
		return nil
	}
	return r.link.Files()
}

// CommandFor is CommandReadOnly for a prepared run: firstFD is the descriptor
// number Files()[0] gets in the child.
func (s *Sandbox) CommandFor(r *Run, dir, home string, infoFD, firstFD int, ro ReadOnly, argv []string) (string, []string) {
	if r != nil && r.link != nil && s.Network() == NetProxy {
		argv = r.link.Argv(firstFD, argv)
	}
	name, args := s.CommandReadOnly(dir, home, infoFD, ro, argv)
	if r != nil {
		name, args = r.cg.Wrap(name, args)
	}
	return name, args
}

// Started is called once the command's process exists.
func (r *Run) Started() {
	if r != nil && r.link != nil {
		r.link.Started()
	}
}

// Finish is called once every process of the command is gone: it ends the
// proxy and removes the cgroup (killing anything still in it).
func (r *Run) Finish() Outcome {
	if r == nil {
		return Outcome{}
	}
	var o Outcome
	if r.link != nil {
		o.Network = r.link.Close()
	}
	o.OOMKilled, o.MemoryMB = r.cg.OOMKilled(), r.mem
	r.cg.Close()
	return o
}

// String describes the outcome's memory kill for a tool result.
func (o Outcome) String() string {
	if !o.OOMKilled {
		return ""
	}
	return fmt.Sprintf("killed: the command exceeded its memory limit of %d MB (RALPH_SANDBOX_MEMORY_MB)", o.MemoryMB)
}
