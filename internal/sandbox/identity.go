package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// DefaultUID and DefaultGID are who a root worker runs commands as
// (RALPH_SANDBOX_UID, RALPH_SANDBOX_GID): the conventional "nobody", which
// owns nothing on the host.
const (
	DefaultUID = 65534
	DefaultGID = 65534
)

// identity is the host uid and gid every process of a command runs as.
type identity struct {
	uid, gid int
	// drop: the worker is root, so commands are started with uid and gid
	// set (a non-root worker runs them as itself).
	drop bool
}

// resolveIdentity picks the commands' uid and gid: cfg's (or the defaults)
// for a root worker, the worker's own otherwise. Neither may be 0: a
// command must hold no privilege on the host.
func resolveIdentity(cfg Config) (identity, error) {
	if os.Geteuid() != 0 {
		return identity{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	id := identity{uid: cfg.UID, gid: cfg.GID, drop: true}
	if id.uid == 0 {
		id.uid = DefaultUID
	}
	if id.gid == 0 {
		id.gid = DefaultGID
	}
	if id.uid < 0 || id.gid < 0 {
		return identity{}, fmt.Errorf("sandbox: RALPH_SANDBOX_UID and RALPH_SANDBOX_GID must be positive, got %d and %d", cfg.UID, cfg.GID)
	}
	return id, nil
}

// credential is what a command's first process is started with (nil: as
// the worker). Supplementary groups are cleared: root's would carry over.
func (id identity) credential() *syscall.Credential {
	if !id.drop {
		return nil
	}
	return &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: []uint32{}}
}

// Credential is who the worker must start a command's processes as (nil:
// as itself). Every process of the call — the process-group watcher, the
// cgroup step, bwrap — gets it, so nothing of a command holds the worker's
// uid.
func (s *Sandbox) Credential() *syscall.Credential {
	if s == nil || s.mode != ModeBwrap {
		return nil
	}
	return s.id.credential()
}

// UID is the host uid commands run as (the worker's own without bubblewrap).
func (s *Sandbox) UID() (uid, gid int) {
	if s == nil || s.mode != ModeBwrap {
		return os.Geteuid(), os.Getegid()
	}
	return s.id.uid, s.id.gid
}
