//go:build unix

package cli

import (
	"os"
	"syscall"
)

func ownerOf(fi os.FileInfo) (int, int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return os.Geteuid(), os.Getegid()
}
