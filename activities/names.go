package activities

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// sessionIDBytes is the entropy of a session id (hex-encoded, twice as long).
const sessionIDBytes = 8

// nameHashChars is how much of a path's hash keeps flattened names unique.
const nameHashChars = 12

// Workspace length bounds: a file name holds at most MaxNameBytes bytes on
// the file systems workers use, and a whole workspace path stays far below
// PATH_MAX once the workspace root and the files inside are added.
const (
	MaxNameBytes      = 255
	MaxWorkspaceBytes = 1024
	// flatNameBytes keeps a flattened name (plus ".lock" and the hash) within
	// one file name.
	flatNameBytes = 200
)

// newSessionID returns a fresh random id for one attempt of one round.
func newSessionID() (string, error) {
	b := make([]byte, sessionIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a session id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// safeName flattens a workspace path into one file name: a simple name is
// kept as is; anything else ("team/repo") has its unsafe characters replaced
// and a hash of the original appended, so distinct workspaces never share a
// name.
func safeName(workspace string) string {
	simple := true
	var b strings.Builder
	for _, r := range workspace {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			simple = false
		}
	}
	if simple && !strings.HasPrefix(workspace, ".") && len(workspace) <= flatNameBytes {
		return workspace
	}
	return withHash(strings.TrimLeft(b.String(), "."), workspace, flatNameBytes)
}

// ShortenName bounds name to maxBytes bytes: a name within the bound is kept,
// a longer one keeps its beginning and ends in a hash of the whole name, so
// two long names never share a shortened one.
func ShortenName(name string, maxBytes int) string {
	if len(name) <= maxBytes {
		return name
	}
	return withHash(name, name, maxBytes)
}

// withHash is prefix (cut at a code point boundary) + "-" + a hash of key,
// at most maxBytes long.
func withHash(prefix, key string, maxBytes int) string {
	sum := sha256.Sum256([]byte(key))
	suffix := "-" + hex.EncodeToString(sum[:])[:nameHashChars]
	keep := min(len(prefix), maxBytes-len(suffix))
	for keep > 0 && keep < len(prefix) && !utf8.RuneStart(prefix[keep]) {
		keep--
	}
	return prefix[:keep] + suffix
}

// CheckWorkspace is the one rule for a workspace path, applied by the
// workflow to its input and again by every round (a worker never trusts its
// input): a clean, non-empty relative path that stays under the workspace
// root and is not the root itself. Messages start with the quoted value so
// callers can name it ("workspace", "--workspace").
func CheckWorkspace(workspace string) error {
	switch {
	case workspace == "":
		return fmt.Errorf("%q is empty: name a directory under the workspace root", workspace)
	case workspace == ".":
		return fmt.Errorf("%q is the workspace root itself: name a directory under it", workspace)
	case strings.ContainsRune(workspace, 0):
		return fmt.Errorf("%q contains NUL", workspace)
	case len(workspace) > MaxWorkspaceBytes:
		return fmt.Errorf("is %d bytes long, over the limit of %d", len(workspace), MaxWorkspaceBytes)
	case filepath.IsAbs(workspace) || strings.HasPrefix(workspace, "/"):
		return fmt.Errorf("%q is absolute: it must be relative to the worker's workspace root", workspace)
	case !filepath.IsLocal(workspace):
		return fmt.Errorf("%q leaves the workspace root (no ..)", workspace)
	case filepath.Clean(workspace) != workspace:
		return fmt.Errorf("%q is not a clean path (did you mean %q?)", workspace, filepath.Clean(workspace))
	}
	for _, part := range strings.Split(workspace, "/") {
		if len(part) > MaxNameBytes {
			return fmt.Errorf("has a path element of %d bytes, over the file-name limit of %d", len(part), MaxNameBytes)
		}
	}
	return nil
}

// ancestors lists the proper ancestors of a clean relative path, outermost
// first: "a/b/c" -> ["a", "a/b"].
func ancestors(workspace string) []string {
	var out []string
	parts := strings.Split(filepath.ToSlash(workspace), "/")
	for i := 1; i < len(parts); i++ {
		out = append(out, strings.Join(parts[:i], "/"))
	}
	return out
}
