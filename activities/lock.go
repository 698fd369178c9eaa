//go:build unix

package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/internal/names"
	"github.com/ralph-temporal/ralph/internal/wait"
)

// lockPollInterval is how often a round waiting for a busy workspace retries
// its lock (the heartbeat keeps running meanwhile, and a cancel ends the wait).
const lockPollInterval = 250 * time.Millisecond

// workspaceLock holds flock(2) locks on files under <SessionDir>/locks,
// outside every workspace. The kernel drops them when the process dies, so
// a killed worker never leaves a workspace locked.
type workspaceLock struct {
	files    []*os.File
	released *lockReleases
}

// lockReleases wakes this worker's rounds waiting for a lock whenever one of
// its own locks is released: a round's candidates queue for the workspace
// one after another to start their trees, and each waiting out
// lockPollInterval behind its sibling cost a 3-candidate round about half a
// second. Another process's release is still seen by polling. The zero
// value is ready.
type lockReleases struct {
	mu sync.Mutex
	ch chan struct{}
}

// next is closed at the next release.
func (r *lockReleases) next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// announce wakes every waiter.
func (r *lockReleases) announce() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}

// lockWorkspace takes a shared lock on each ancestor of the workspace and an
// exclusive lock on the workspace itself, in that order (outermost first,
// the same global order for every round, so no two rounds deadlock). Rounds
// on "a" and "a/b" thus exclude each other, while "a/b" and "a/c" run side by
// side. waiting is called once if the lock is busy.
func (a *Activities) lockWorkspace(ctx context.Context, workspace string, waiting func()) (*workspaceLock, error) {
	l := &workspaceLock{released: &a.released}
	steps := append(ancestors(workspace), workspace)
	for i, name := range steps {
		how := syscall.LOCK_SH
		if i == len(steps)-1 {
			how = syscall.LOCK_EX
		}
		f, err := a.acquire(ctx, name, how, waiting)
		if err != nil {
			l.release()
			return nil, err
		}
		l.files = append(l.files, f)
	}
	return l, nil
}

func (a *Activities) acquire(ctx context.Context, name string, how int, waiting func()) (*os.File, error) {
	path := filepath.Join(a.cfg.SessionDir, locksDirName, names.Flat(name)+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the workspace lock %s: %w", path, err)
	}
	told := false
	poll := a.lockPoll
	if poll <= 0 {
		poll = lockPollInterval
	}
	err = wait.UntilWoken(ctx, poll, a.released.next, func(context.Context) error {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return wait.Final(fmt.Errorf("lock the workspace %q (%s): %w", name, path, err))
		}
		if err != nil && !told && waiting != nil {
			waiting()
			told = true
		}
		return err
	})
	var timedOut *wait.TimedOut
	if errors.As(err, &timedOut) {
		err = timedOut.Ctx
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// release drops every lock (closing the file releases its flock).
func (l *workspaceLock) release() {
	for i := len(l.files) - 1; i >= 0; i-- {
		l.files[i].Close()
	}
	if len(l.files) > 0 && l.released != nil {
		l.released.announce()
	}
	l.files = nil
}
