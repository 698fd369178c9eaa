package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// Enter moves the calling thread into g's groups (cgroup v1), so that a
// process the thread forks is born inside them: no step of the command
// moves itself in (Wrap's sh, a process start of its own), and nothing
// the command runs ever runs outside its groups. cgroup v1 places threads
// one by one and a child starts in its forking thread's groups, as v2's
// CgroupFD starts it in one.
//
// The caller holds the thread, not the main one, locked
// (runtime.LockOSThread) from Enter until leave has returned, and starts only the one command in between
// (Go asks another thread to create threads for a locked one). leave moves
// the thread back to the groups g was made in. When it cannot, the thread
// is locked for good, so Go ends it when its goroutine ends (which must
// then end) rather than let it fork other commands inside g.
func (g *Group) Enter() (leave func() error, err error) {
	switch {
	case g == nil || g.v2 || len(g.dirs) == 0:
		return nil, errors.New("cgroup: only a cgroup v1 group is entered by a thread")
	case g.frzDir != "":
		// Frozen with the command, the worker's thread would stop too.
		return nil, errors.New("cgroup: a group with a freezer is not entered by a thread")
	case syscall.Gettid() == os.Getpid():
		// The main thread's groups are the process's as /proc/<pid>/cgroup
		// shows them (to Detect, to a test looking for a worker's commands).
		return nil, errors.New("cgroup: the main thread does not enter a group (start the command from another)")
	}
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	var moved []string
	leave = func() error {
		var errs []error
		for _, dir := range moved {
			home := filepath.Dir(dir)
			if err := os.WriteFile(filepath.Join(home, "tasks"), tid, 0); err != nil {
				errs = append(errs, fmt.Errorf("cgroup: moving the thread back to %s: %w", home, err))
			}
		}
		moved = nil
		if err := errors.Join(errs...); err != nil {
			runtime.LockOSThread() // never unlocked: the thread ends with its goroutine
			return err
		}
		return nil
	}
	for _, dir := range g.dirs {
		if err := os.WriteFile(filepath.Join(dir, "tasks"), tid, 0); err != nil {
			return nil, errors.Join(fmt.Errorf("cgroup: moving the thread into %s: %w", dir, err), leave())
		}
		moved = append(moved, dir)
	}
	return leave, nil
}
