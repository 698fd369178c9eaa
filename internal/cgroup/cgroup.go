// Package cgroup puts one command (with everything it starts) into its own
// control group with a memory and a process-count limit, where the worker
// may create groups: cgroup v2 with a delegated subtree, or writable v1
// memory and pids hierarchies.
package cgroup

import (
	"fmt"
	"strings"
)

// Limits are what every command's group holds it to; zero means unlimited.
type Limits struct {
	MemoryBytes int64
	Pids        int
}

// Controllers that can be enforced.
const (
	Memory = "memory"
	Pids   = "pids"
)

// Manager creates the groups of one worker's commands. A nil Manager
// creates none.
type Manager struct {
	version  int    // 1 or 2
	v2Dir    string // v2: the directory command groups are created in
	memDir   string // v1: the memory hierarchy's directory ("": not limited)
	pidsDir  string // v1: the pids hierarchy's directory
	frzDir   string // v1: the freezer hierarchy's directory ("": none)
	lim      Limits
	prefix   string
	enforced []string
	// owner (v1): the uid and gid commands run as, who must move their
	// own first process into the group; nil when that is the worker.
	owner *[2]int
}

// RunAs tells m that commands run as uid and gid (a root worker's
// commands do not): in cgroup v1 the step that moves a command into its
// groups runs as them, so their groups' process lists are theirs to write
// (the limit files stay the worker's). In cgroup v2 the worker starts the
// command inside its group (Group.FD).
func (m *Manager) RunAs(uid, gid int) {
	if m != nil {
		m.owner = &[2]int{uid, gid}
	}
}

// WithoutFreezer is m creating no freezer group (cgroup v1): for commands
// the worker never freezes, one directory less to make and remove.
func (m *Manager) WithoutFreezer() *Manager {
	if m == nil {
		return nil
	}
	c := *m
	c.frzDir = ""
	return &c
}

// Enforced names the limits that hold ("memory", "pids").
func (m *Manager) Enforced() []string {
	if m == nil {
		return nil
	}
	return append([]string(nil), m.enforced...)
}

// Version is 1 or 2 (0 for a nil Manager).
func (m *Manager) Version() int {
	if m == nil {
		return 0
	}
	return m.version
}

// Freezer names how a command's groups can be frozen: "cgroup-v2-freeze",
// "cgroup-v1-freezer", or "" when they cannot.
func (m *Manager) Freezer() string {
	switch {
	case m == nil:
		return ""
	case m.version == 2:
		return "cgroup-v2-freeze"
	case m.frzDir != "":
		return "cgroup-v1-freezer"
	}
	return ""
}

// Describe is the start line's word on the limits.
func (m *Manager) Describe() string {
	if m == nil {
		return "none"
	}
	var parts []string
	for _, c := range m.enforced {
		switch c {
		case Memory:
			parts = append(parts, fmt.Sprintf("memory %d MB", m.lim.MemoryBytes>>20))
		case Pids:
			parts = append(parts, fmt.Sprintf("pids %d", m.lim.Pids))
		}
	}
	return fmt.Sprintf("%s (cgroup v%d)", strings.Join(parts, ", "), m.version)
}

// wrapScript moves the shell into every group it is given (its own pid,
// before anything else runs) and then becomes the command: everything the
// command starts is born inside the groups. It is POSIX sh: a minimal sh
// (dash) starts in half the time bash takes, once per command.
const wrapScript = `n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"`

// Wrap returns the program and arguments that run name args inside g.
func (g *Group) Wrap(name string, args []string) (string, []string) {
	if g == nil || len(g.procs) == 0 || g.dirFD >= 0 {
		return name, args
	}
	a := []string{"-c", wrapScript, "ralph-cgroup", fmt.Sprint(len(g.procs))}
	a = append(a, g.procs...)
	a = append(a, name)
	return "sh", append(a, args...)
}
