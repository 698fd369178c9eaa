package sandbox

import (
	"path/filepath"

	"github.com/ralph-temporal/ralph/internal/toolcache"
)

// ToolCacheMount is where a command sees its tool cache copy under
// bubblewrap: one path for every copy, because Go keys what it caches on
// GOMODCACHE's path (a copy elsewhere would miss every entry).
const ToolCacheMount = sandboxTmp + "/.ralph-toolcache"

// toolCacheDir holds the store beside the private homes, in the hidden
// session directory; its name cannot be a workspace's home (names.Flat
// never starts with a dot).
const toolCacheDir = ".toolcache"

func (s *Sandbox) openToolCaches(maxMB int) error {
	root := filepath.Join(s.homes, toolCacheDir)
	var err error
	s.caches, err = toolcache.New(root, maxMB, toolcache.Owner{UID: s.id.uid, GID: s.id.gid, Other: s.id.drop})
	if err != nil {
		return err
	}
	// bwrap binds a copy as the commands' uid: it must reach the work
	// directory (not list it); the lines themselves stay out of reach.
	return s.reachable(filepath.Join(root, "work"))
}

// ToolCaches is the worker's store of warm tool caches (nil without a
// sandbox: commands keep the worker's own caches).
func (s *Sandbox) ToolCaches() *toolcache.Store {
	if s == nil {
		return nil
	}
	return s.caches
}

// ToolCacheEnv points the tools at the copy at dir, as the command sees it.
func (s *Sandbox) ToolCacheEnv(dir string) []string {
	if s != nil && s.mode == ModeBwrap {
		dir = ToolCacheMount
	}
	return toolcache.Env(dir)
}
