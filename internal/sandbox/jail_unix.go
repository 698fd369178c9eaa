//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

func setCloseOnExec(fd int) { unix.CloseOnExec(fd) }

// owner is a file's uid, gid and link count (-1s when unknown).
func owner(fi fs.FileInfo) (uid, gid int, links uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, -1, 0
	}
	return int(st.Uid), int(st.Gid), uint64(st.Nlink)
}
