//go:build !unix

package tools

import (
	"context"
	"errors"
	"time"
)

// execute is unsupported without Unix process groups: a command could not
// be killed together with its children, and no command may outlive its call.
func (w *Workspace) execute(ctx context.Context, command string, timeout time.Duration, outputCap int, _ bool, _ string) (execOutcome, error) {
	return execOutcome{}, errors.New("run_command: unsupported on this platform (needs Unix process groups)")
}

func (w *Workspace) spawn(context.Context, Process, time.Duration, int) (execOutcome, error) {
	return execOutcome{}, errors.New("spawn: unsupported on this platform (needs Unix process groups)")
}
