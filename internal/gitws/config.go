// Package gitws keeps a workspace as a git work tree: one checkpoint commit
// per round, abandoned attempts saved on their own refs, and (remote mode) a
// branch on a shared remote as the durable workspace.
//
// Every git command here is the worker's own step: the real git binary with
// the worker's configuration and credentials, outside the model's sandbox,
// with workspace hooks disabled and a timeout.
package gitws

import (
	"errors"
	"fmt"
	"net/mail"
	"os/exec"
	"strings"
	"time"
)

// Modes of RALPH_GIT.
const (
	ModeOff    = "off"
	ModeLocal  = "local"
	ModeRemote = "remote"
)

// Defaults and fixed names.
const (
	// DefaultAuthor is the author and committer of checkpoint commits.
	DefaultAuthor = "Ralph <ralph@localhost>"
	// CommandTimeout bounds one git command (a clone of a large repository
	// included); the round's own deadline and cancel bound it too.
	CommandTimeout = 10 * time.Minute
	// BranchPrefix: remote mode works the branch ralph/<workspace>.
	BranchPrefix = "ralph/"
	// AbandonedRefPrefix holds what lost attempts left uncommitted:
	// refs/ralph/abandoned/<workflow id>/round-<R>-attempt-<A>.
	AbandonedRefPrefix = "refs/ralph/abandoned/"
	// UnpushedRefPrefix keeps a checkpoint whose push failed:
	// refs/ralph/unpushed/<workflow id>/round-<R>-attempt-<A>.
	UnpushedRefPrefix = "refs/ralph/unpushed/"
	// upstreamRef is the last fetched head of the remote branch.
	upstreamRef = "refs/ralph/upstream"
	// outputCap bounds what is kept of one git command's output.
	outputCap = 64 << 10
)

// Setting names, for messages.
const (
	SettingMode   = "RALPH_GIT"
	SettingRemote = "RALPH_GIT_REMOTE"
	SettingAuthor = "RALPH_GIT_AUTHOR"
)

// Config is the deployment's git policy.
type Config struct {
	Mode   string // ModeOff, ModeLocal or ModeRemote
	Remote string // RALPH_GIT_REMOTE (remote mode)
	Author string // RALPH_GIT_AUTHOR, "Name <email>"
	// MemoryMB bounds the memory of each git command (RALPH_GIT_MEMORY_MB;
	// 0: DefaultMemoryMB).
	MemoryMB int
	// MaxTreeBytes and MaxTreeFiles bound a tree the worker materialises
	// (the workspace's RALPH_WORKSPACE_MAX_MB and RALPH_WORKSPACE_MAX_FILES;
	// 0: unbounded). The worker sets them from its sandbox's bounds.
	MaxTreeBytes int64
	MaxTreeFiles int64
}

// DefaultConfig is git off.
func DefaultConfig() Config {
	return Config{Mode: ModeOff, Author: DefaultAuthor, MemoryMB: DefaultMemoryMB}
}

func (c Config) memoryMB() int {
	if c.MemoryMB <= 0 {
		return DefaultMemoryMB
	}
	return c.MemoryMB
}

// Enabled reports whether checkpoints are on.
func (c Config) Enabled() bool { return c.Mode == ModeLocal || c.Mode == ModeRemote }

// Validate checks the policy and that git can run, naming the setting at fault.
func (c Config) Validate() error {
	switch c.Mode {
	case ModeOff:
		return nil
	}
	if c.MemoryMB < 0 {
		return fmt.Errorf("%s must be a positive integer, got %d", SettingMemory, c.MemoryMB)
	}
	switch c.Mode {
	case ModeLocal:
		if c.Remote != "" {
			return fmt.Errorf("%s is set but %s=%s: a remote is used only with %s=%s", SettingRemote, SettingMode, c.Mode, SettingMode, ModeRemote)
		}
	case ModeRemote:
		if strings.TrimSpace(c.Remote) == "" {
			return fmt.Errorf("%s=%s needs %s (a URL git can fetch from and push to)", SettingMode, ModeRemote, SettingRemote)
		}
		if strings.HasPrefix(strings.TrimSpace(c.Remote), "-") {
			return fmt.Errorf("%s %q must not start with '-'", SettingRemote, RedactURL(c.Remote))
		}
	default:
		return fmt.Errorf("%s must be %s, %s or %s, got %q", SettingMode, ModeOff, ModeLocal, ModeRemote, c.Mode)
	}
	if _, _, err := ParseAuthor(c.Author); err != nil {
		return fmt.Errorf("%s: %w", SettingAuthor, err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("%s=%s needs the git binary on PATH: %w", SettingMode, c.Mode, err)
	}
	return nil
}

// ParseAuthor splits "Name <email>" into its parts.
func ParseAuthor(s string) (name, email string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", errors.New(`the author is empty, want "Name <email>"`)
	}
	addr, perr := mail.ParseAddress(s)
	if perr != nil || addr.Name == "" || !strings.HasSuffix(s, ">") {
		return "", "", fmt.Errorf(`author %q does not parse as "Name <email>"`, s)
	}
	if strings.ContainsAny(addr.Name+addr.Address, "<>\n\r") {
		return "", "", fmt.Errorf(`author %q holds '<', '>' or a line break in its name or email`, s)
	}
	return addr.Name, addr.Address, nil
}
