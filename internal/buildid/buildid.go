// Package buildid names the code a binary runs: the VCS revision the Go
// toolchain stamped into it (with -dirty when the tree was modified), or,
// where the binary carries none (`go build -buildvcs=false`, `go run` outside
// a repository), a hash of the executable itself, so different code always
// gets a different id.
package buildid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

// Default is the build id of the running binary.
func Default() (string, error) {
	if info, ok := debug.ReadBuildInfo(); ok {
		if id := FromSettings(info.Settings); id != "" {
			return id, nil
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("build id: find the executable: %w", err)
	}
	return FileHash(exe)
}

// FromSettings is the VCS revision among a binary's build settings, with
// -dirty when the tree was modified; "" when there is none.
func FromSettings(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return ""
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return rev
}

// FileHash is the first 12 hex digits of the SHA-256 of a file.
func FileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("build id: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("build id: hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}
