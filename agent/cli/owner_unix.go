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

// mkdirOwned makes dir owned like home.
func mkdirOwned(dir, home string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return chownLike(dir, home)
}

// chownLike gives path the owner of home (the CLI's uid).
func chownLike(path, home string) error {
	fi, err := os.Stat(home)
	if err != nil {
		return err
	}
	uid, gid := ownerOf(fi)
	return os.Chown(path, uid, gid)
}
