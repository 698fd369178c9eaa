package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A group made and removed around every command costs a mkdir and a rmdir
// in each hierarchy, and the kernel keeps a removed memory group, dying,
// for as long as page cache is charged to it: a worker's git left
// thousands (/proc/cgroups counted 3,461 memory groups, 14 of them live,
// on a machine that had run the test suites all day). A group reused for
// one command after another has neither cost; Idle and Reset make the
// next command's view of it its own.

// Idle is whether no process but the worker's own (a thread of it living
// in the group: see gitws's stations) is in any of the group's hierarchies.
func (g *Group) Idle() bool {
	if g == nil {
		return false
	}
	for _, procs := range g.procs {
		for _, pid := range readPids(procs) {
			if pid != os.Getpid() {
				return false
			}
		}
	}
	return true
}

// Reset makes the group's peak (PeakBytes) and OOM kills (OOMKilled)
// count from now: cgroup v1 only, with no freezer (v2's memory.peak
// resets per open descriptor, and a frozen group is the sandbox's).
func (g *Group) Reset() error {
	switch {
	case g == nil || g.v2 || g.frzDir != "":
		return errors.New("cgroup: only a cgroup v1 group without a freezer is reset for another command")
	case g.memDir == "":
		return nil
	}
	// Any write sets the high-water mark to the current use.
	if err := os.WriteFile(filepath.Join(g.memDir, "memory.max_usage_in_bytes"), []byte("0"), 0); err != nil {
		return fmt.Errorf("cgroup: resetting the peak of %s: %w", g.memDir, err)
	}
	g.peakBase, g.oomBase = g.memoryValue("memory.max_usage_in_bytes", ""), g.oomKills()
	return nil
}

// UsageBytes is the memory charged to the group now (cgroup v1: page cache
// its commands read or wrote stays charged after they end; 0 when the
// kernel does not say).
func (g *Group) UsageBytes() int64 {
	return g.memoryValue("memory.usage_in_bytes", "memory.current")
}
