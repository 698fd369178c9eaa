// Package gitws keeps a workspace as a git work tree: one checkpoint commit
// per round, abandoned attempts saved on their own refs, and (remote mode) a
// branch on a shared remote as the durable workspace.
package gitws

// Modes of RALPH_GIT.
const (
	ModeOff    = "off"
	ModeLocal  = "local"
	ModeRemote = "remote"
)

// DefaultAuthor is the author and committer of checkpoint commits.
const DefaultAuthor = "Ralph <ralph@localhost>"

// Config is the deployment's git policy.
type Config struct {
	Mode   string // ModeOff, ModeLocal or ModeRemote
	Remote string // RALPH_GIT_REMOTE (remote mode)
	Author string // RALPH_GIT_AUTHOR, "Name <email>"
}

// DefaultConfig is git off.
func DefaultConfig() Config { return Config{Mode: ModeOff, Author: DefaultAuthor} }
