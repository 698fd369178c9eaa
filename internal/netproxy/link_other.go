//go:build !linux

package netproxy

import (
	"errors"
	"os"
)

// Link exists only on Linux, the one platform with bubblewrap.
type Link struct{}

// NewLink fails: network namespaces exist only on Linux.
func NewLink(*AllowList) (*Link, error) {
	return nil, errors.New("sandbox network: the proxy needs Linux network namespaces")
}

func (k *Link) Files() []*os.File                  { return nil }
func (k *Link) Argv(_ int, argv []string) []string { return argv }
func (k *Link) Started()                           {}
func (k *Link) Close() []Record                    { return nil }

// CanEnter is false: there are no network namespaces to enter.
func CanEnter() bool { return false }

// NewEnterLink fails: network namespaces exist only on Linux.
func NewEnterLink(*AllowList) (*Link, error) { return NewLink(nil) }

func (k *Link) BwrapArgs(int) []string { return nil }
func (k *Link) Enter(int) error        { return nil }
