//go:build linux

package workerapp

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// makeNonDumpable stops processes of the worker's own user from reading its
// memory and /proc/<pid>/environ (the model key, TEMPORAL_API_KEY) or
// attaching a debugger; it also turns off core dumps, which would hold them.
func makeNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the worker non-dumpable (prctl PR_SET_DUMPABLE): %w", err)
	}
	return nil
}
