package tools

import (
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// DiskCheckInterval is how often a running command's disk use is checked
// against RALPH_WORKSPACE_MAX_MB and RALPH_MIN_FREE_MB, at most: the check
// walks the workspace, so after a walk that took w the next one waits
// diskCheckShare times w (a large workspace costs a tenth of a core), but
// never longer than diskCheckMaxGap: the bound is checked at least once a
// second whatever the walk costs.
const (
	DiskCheckInterval = 500 * time.Millisecond
	diskCheckShare    = 10
	diskCheckMaxGap   = time.Second
)

// diskWatch checks a running command's disk use; hit delivers why it must
// be killed (nil channel: nothing is checked).
type diskWatch struct {
	hit  chan string
	done chan struct{}
	once sync.Once
}

// watchDisk checks the workspace dir and home, a home of the command's own
// (an agent CLI's; "": none).
func watchDisk(sb *sandbox.Sandbox, dir, home string) *diskWatch {
	w := &diskWatch{done: make(chan struct{})}
	if sb == nil {
		return w
	}
	w.hit = make(chan string, 1)
	go func() {
		t := time.NewTimer(DiskCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				began := time.Now()
				if why := sb.DiskOver(dir, home); why != "" {
					w.hit <- why
					return
				}
				t.Reset(min(diskCheckMaxGap, max(DiskCheckInterval, diskCheckShare*time.Since(began))))
			}
		}
	}()
	return w
}

func (w *diskWatch) stop() { w.once.Do(func() { close(w.done) }) }
