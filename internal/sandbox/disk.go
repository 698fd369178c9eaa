package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// diskBounds are the disk limits a running command is held to.
type diskBounds struct {
	maxBytes    int64    // one workspace (RALPH_WORKSPACE_MAX_MB)
	minFree     int64    // kept free (RALPH_MIN_FREE_MB)
	fileSystems []string // paths on the file systems that must keep it free
}

// DiskOver checks the workspace at dir against the disk bounds and says,
// for the tool result, which one it passed and the size now ("" within
// both). A command is killed when it does.
func (s *Sandbox) DiskOver(dir string) string {
	if s == nil {
		return ""
	}
	b := s.disk
	for _, p := range append([]string{dir}, b.fileSystems...) {
		if p == "" {
			continue
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err != nil {
			continue
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		if free < b.minFree {
			return fmt.Sprintf("killed: the file system holding %s has %d MB free, under RALPH_MIN_FREE_MB (%d MB)", p, free>>20, b.minFree>>20)
		}
	}
	if used := usedBytes(dir, b.maxBytes); used > b.maxBytes {
		return fmt.Sprintf("killed: the workspace uses %d MB, over RALPH_WORKSPACE_MAX_MB (%d MB)", used>>20, b.maxBytes>>20)
	}
	return ""
}

// usedBytes is the disk space the tree at dir takes (allocated blocks, so
// sparse files count as what they hold), counted until it passes limit.
func usedBytes(dir string, limit int64) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += int64(st.Blocks) * 512
		}
		if total > limit {
			return filepath.SkipAll
		}
		return nil
	})
	return total
}
