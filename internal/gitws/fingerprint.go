package gitws

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/ralph-temporal/ralph/internal/readable"
)

// FilesFingerprint is the workspace's fingerprint when checkpoints are off:
// a hash over the path, size, mode and modification time of every entry
// outside .git (symlinks as links, never followed). Contents are not read,
// so it stays cheap on a large tree; any write that touches a file changes
// its modification time.
func FilesFingerprint(ctx context.Context, dir string) (string, error) {
	if err := readable.Tree(dir); err != nil {
		return "", fmt.Errorf("fingerprint the workspace %s: %w", dir, err)
	}
	h := sha256.New()
	var num [8]byte
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return readable.Unreadable(path, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if rel == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		if rel == ".git" {
			return nil // a gitdir file is git's, not the work's
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Write([]byte(filepath.ToSlash(rel)))
		h.Write([]byte{0})
		for _, v := range []uint64{uint64(info.Size()), uint64(info.Mode()), uint64(info.ModTime().UnixNano())} {
			binary.LittleEndian.PutUint64(num[:], v)
			h.Write(num[:])
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("fingerprint the workspace %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
