package sandbox

import (
	"fmt"
	"os"
)

// seccompFile is a pipe holding the filter for one bwrap (--seccomp reads
// its descriptor to the end).
func seccompFile(program []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: seccomp pipe: %w", err)
	}
	_, err = w.Write(program) // far below a pipe's capacity
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("sandbox: writing the seccomp filter: %w", err)
	}
	return r, nil
}
