//go:build unix

package tools

import (
	"os"

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
// the bwrap process, which must be the reported process's parent.
func watchNSInit(r *os.File, bwrapPid int) *nsWatch {
	w := &nsWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		pid, err := sandbox.InitPID(r)
		if err != nil {
			return
		}
		w.init = openNSInit(pid, bwrapPid)
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

// close waits for the watch to end and releases its handle.
func (w *nsWatch) close() {
	<-w.done
	if w.init != nil {
		w.init.close()
	}
}
