package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// diskBounds are the disk limits a running command is held to.
type diskBounds struct {
	maxBytes     int64    // one workspace (RALPH_WORKSPACE_MAX_MB)
	minFree      int64    // kept free (RALPH_MIN_FREE_MB)
	maxFiles     int64    // files of a workspace and an agent's home (RALPH_WORKSPACE_MAX_FILES)
	homeMaxBytes int64    // an agent CLI's home (RALPH_AGENT_HOME_MAX_MB)
	fileSystems  []string // paths on the file systems that must keep it free
}

// DiskOver checks the workspace at dir, and home when a command writes one
// of its own (an agent CLI's: "" for none), against the disk bounds and
// says, for the tool result, which one it passed and the size now (""
// within all). A command is killed when it does.
func (s *Sandbox) DiskOver(dir, home string) string {
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
	ws := measure(dir, b.maxBytes, b.maxFiles)
	if ws.bytes > b.maxBytes {
		return fmt.Sprintf("killed: the workspace uses %d MB, over RALPH_WORKSPACE_MAX_MB (%d MB)", ws.bytes>>20, b.maxBytes>>20)
	}
	var h usage
	if home != "" {
		h = measure(home, b.homeMaxBytes, b.maxFiles-ws.files)
	}
	if h.bytes > b.homeMaxBytes {
		return fmt.Sprintf("killed: the agent's home uses %d MB, over RALPH_AGENT_HOME_MAX_MB (%d MB)", h.bytes>>20, b.homeMaxBytes>>20)
	}
	if n := ws.files + h.files; n > b.maxFiles {
		return fmt.Sprintf("killed: the workspace and the agent's home hold %d files, over RALPH_WORKSPACE_MAX_FILES (%d)", n, b.maxFiles)
	}
	return ""
}

// usage is what a tree takes: allocated bytes and entries (inodes).
type usage struct{ bytes, files int64 }

// measure walks the tree at dir (never following a link) until it passes
// maxBytes or maxFiles; sparse files count as what they hold.
func measure(dir string, maxBytes, maxFiles int64) usage {
	var u usage
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		u.files++
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			u.bytes += int64(st.Blocks) * 512
		}
		if u.bytes > maxBytes || u.files > maxFiles {
			return filepath.SkipAll
		}
		return nil
	})
	return u
}

// WorkspaceBounds are RALPH_WORKSPACE_MAX_MB (in bytes) and
// RALPH_WORKSPACE_MAX_FILES as resolved: the worker's git holds a tree it
// materialises to them too (0, 0 for a nil Sandbox: unbounded).
func (s *Sandbox) WorkspaceBounds() (maxBytes, maxFiles int64) {
	if s == nil {
		return 0, 0
	}
	return s.disk.maxBytes, s.disk.maxFiles
}
