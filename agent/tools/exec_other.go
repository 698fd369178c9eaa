//go:build !unix

package tools

import (
	"context"
	"errors"
	"time"
)

// execute is unsupported without Unix process groups: a command could not
// be reliably killed together with its children, which SPEC section 5
// requires.
func (w *Workspace) execute(ctx context.Context, command string, timeout time.Duration, outputCap int) (execOutcome, error) {
	return execOutcome{}, errors.New("run_command: unsupported on this platform (needs Unix process groups)")
}
