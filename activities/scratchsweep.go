package activities

import (
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// scratchName matches the scratch clones a campaign's steps make under
// campaigns/<id>/ (campaignGit): never the task workspaces (tasks/) nor a
// local-mode campaign's repository (integration.git).
var scratchName = regexp.MustCompile(`^(merge|read-tasks|lane-[0-9]+|prepare-.+|plan-[0-9]+)$`)

// staleScratch is the age past which a scratch clone is a killed worker's:
// every step removes its own when it ends, on every path, and none runs
// this long (a merge step has an hour; workers sharing the workspace root
// must not remove each other's in use).
const staleScratch = 24 * time.Hour

// sweepScratches removes, at worker start, the scratch clones a killed
// worker left: a lane's (lane-<n>) is never made again, so it would stay.
func sweepScratches(workspaceRoot string) {
	dirs, _ := filepath.Glob(filepath.Join(workspaceRoot, "campaigns", "*", "*"))
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || !scratchName.MatchString(filepath.Base(dir)) || time.Since(fi.ModTime()) < staleScratch {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			_ = os.RemoveAll(dir)
		}
	}
}
