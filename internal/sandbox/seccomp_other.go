//go:build !linux

package sandbox

import "errors"

// seccompProgram: bubblewrap, and so the filter, exist only on Linux.
func seccompProgram() ([]byte, error) { return nil, errors.New("seccomp exists only on Linux") }
