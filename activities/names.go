package activities

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ralph-temporal/ralph/internal/names"
)

// sessionIDBytes is the entropy of a session id (hex-encoded, twice as long).
const sessionIDBytes = 8

// MaxWorkspaceBytes bounds a whole workspace path, far below PATH_MAX once
// the workspace root and the files inside are added; each element is bounded
// by names.MaxNameBytes.
const MaxWorkspaceBytes = 1024

// newSessionID returns a fresh random id for one attempt of one round.
func newSessionID() (string, error) {
	b := make([]byte, sessionIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate a session id: %w", err)
	}
	return hex.EncodeToString(b), nil
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
	case strings.Split(workspace, "/")[0] == CandidatesDir:
		return fmt.Errorf("%q is inside %s, where the worker keeps round candidates' trees", workspace, CandidatesDir)
	}
	for _, part := range strings.Split(workspace, "/") {
		if len(part) > names.MaxNameBytes {
			return fmt.Errorf("has a path element of %d bytes, over the file-name limit of %d", len(part), names.MaxNameBytes)
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
