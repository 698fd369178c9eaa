package sandbox

import (
	"io/fs"
	"syscall"
)

// stampOf is a directory's (device, inode, ctime); ok is false when the
// file system does not say.
func stampOf(fi fs.FileInfo) (dirStamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirStamp{}, false
	}
	return dirStamp{dev: uint64(st.Dev), ino: st.Ino, ctime: st.Ctim}, true
}
