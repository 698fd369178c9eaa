//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the seccomp_data.arch of this machine's native system calls;
// arm64 has no second ABI sharing the call.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)
