package sandbox

import (
	"sync"
	"syscall"
	"time"
)

// Own runs before every command and would otherwise read and Lstat every
// entry of the workspace each time. ownedDirs remembers, per directory,
// the (device, inode, ctime) it had when a walk found every entry in it
// owned by the commands' uid, and its subdirectories. A directory that
// still has that stamp gained, lost or renamed no entry since (each of
// those sets its ctime, which no unprivileged process can set), and an
// entry's owner changes only by a chown, which only the worker does; so
// it is not read again, only its subdirectories are walked. A stale entry
// can only leave a file with its owner, never give one away: the cache can
// cost the model a write, never grant it one.
type ownedDirs struct {
	fine time.Duration // ctimeSettleFine unless a test lengthens it
	mu   sync.Mutex
	m    map[string]ownedDir
}

// ownedDir is what a walk found of one directory.
type ownedDir struct {
	stamp   dirStamp
	subdirs []string
}

type dirStamp struct {
	dev, ino uint64
	ctime    syscall.Timespec
}

// maxOwnedDirs bounds one worker's cache; when full it starts again empty.
const maxOwnedDirs = 200_000

// A ctime is trusted only when it is older than the walk by more than the
// clock's granularity (whole seconds on some filesystems): a change right
// after the walk could otherwise carry the same ctime.
const (
	ctimeSettleFine   = 100 * time.Millisecond
	ctimeSettleCoarse = 3 * time.Second
)

// get returns what a walk found of dir when its stamp is still st.
func (o *ownedDirs) get(dir string, st dirStamp) (ownedDir, bool) {
	if o == nil {
		return ownedDir{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	d, ok := o.m[dir]
	return d, ok && d.stamp == st
}

// remember records what a walk that found every entry owned saw of the
// directories that are settled by the walk's start.
func (o *ownedDirs) remember(seen map[string]ownedDir, start time.Time) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m)+len(seen) > maxOwnedDirs {
		o.m = map[string]ownedDir{}
	}
	for dir, d := range seen {
		if settled(d.stamp.ctime, start, o.fine) {
			o.m[dir] = d
		} else {
			delete(o.m, dir)
		}
	}
}

func settled(ctime syscall.Timespec, start time.Time, fine time.Duration) bool {
	wait := fine
	if ctime.Nsec == 0 {
		wait = ctimeSettleCoarse
	}
	return time.Unix(ctime.Sec, ctime.Nsec).Before(start.Add(-wait))
}
