//go:build unix

package tools

import (
	"os"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// nsWatch learns, from bwrap's info pipe, which process leads a command's
// PID namespace, and holds a handle on it that cannot be confused with a
// later process that reuses the pid.
type nsWatch struct {
	done chan struct{}
	init *nsInit // set before done closes; nil when bwrap reported nothing usable
}

// watchNSInit reads bwrap's report from r in the background. bwrapPid is
// the bwrap process, which must be the reported process's parent. entered
// is then given a pidfd on the reported process (-1 when there is none).
func watchNSInit(r *os.File, bwrapPid int, entered func(pidfd int)) *nsWatch {
	w := &nsWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		pidfd := -1
		defer func() { entered(pidfd) }()
		pid, err := sandbox.InitPID(r)
		if err != nil {
			return
		}
		w.init = openNSInit(pid, bwrapPid)
		pidfd = w.init.pidfd()
	}()
	return w
}

// ready is the namespace's first process if it is known by now (nil
// without bubblewrap).
func (w *nsWatch) ready() *nsInit {
	if w == nil {
		return nil
	}
	select {
	case <-w.done:
		return w.init
	default:
		return nil
	}
}

// end runs once bwrap has exited: bwrap does not wait for its namespace to
// empty, so the namespace's first process is killed and its exit awaited
// (by then the kernel has killed and reaped everything else in it). r, the
// info pipe, is closed so that a report that never came ends the watch.
func (w *nsWatch) end(r *os.File) {
	select {
	case <-w.done:
	case <-time.After(OutputDrainTimeout):
	}
	r.Close()
	<-w.done
	if w.init != nil {
		w.init.kill()
		w.init.awaitExit(OutputDrainTimeout)
		w.init.close()
	}
}
