//go:build !linux

package cgroup

import "errors"

// Detect: control groups exist only on Linux.
func Detect(Limits) (*Manager, string) { return nil, "control groups exist only on Linux" }

// Group is a command's groups (none outside Linux).
type Group struct {
	procs []string
	dirFD int
}

func (m *Manager) New() (*Group, error) { return nil, nil }
func (g *Group) OOMKilled() bool        { return false }
func (g *Group) PeakBytes() int64       { return 0 }
func (g *Group) Close()                 {}
func (g *Group) FD() (int, bool)        { return -1, false }

func (g *Group) Frozen() bool  { return false }
func (g *Group) Freeze() error { return errors.New("cgroup: no freezer outside Linux") }
func (g *Group) Thaw() error   { return nil }

func (g *Group) Enter() (func() error, error) {
	return nil, errors.New("cgroup: control groups exist only on Linux")
}

func (g *Group) Idle() bool { return false }
func (g *Group) Reset() error {
	return errors.New("cgroup: control groups exist only on Linux")
}
func (g *Group) UsageBytes() int64 { return 0 }
