package gitws

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// TaskTreeError is a task whose tree the worker's git refused or could not
// merge though nothing conflicted: the tree passed a workspace bound
// (*TreeTooBigError), git was killed on it for passing RALPH_GIT_MEMORY_MB
// (*MemoryBoundError) or ran out of time on it, or git failed on it. The
// task is at fault, not the worker: it goes back (a merge) or fails (its
// preparation), and no retry of the same step can help.
type TaskTreeError struct {
	Task string
	Err  error
}

func (e *TaskTreeError) Error() string {
	return fmt.Sprintf("task %s's tree: %v", e.Task, e.Err)
}

func (e *TaskTreeError) Unwrap() error { return e.Err }

// Reason names the bound or failure, for the task's report.
func (e *TaskTreeError) Reason() string {
	var big *TreeTooBigError
	var mem *MemoryBoundError
	switch {
	case errors.As(e.Err, &big):
		return "tree too big (" + big.Bound + ")"
	case errors.As(e.Err, &mem):
		return "git killed by " + SettingMemory
	case errors.Is(e.Err, context.DeadlineExceeded):
		return fmt.Sprintf("git ran past %s", CommandTimeout)
	}
	return "git failed on the tree"
}

// taskTreeError says whether err, from a step on task's tree, is the
// tree's fault: then a *TaskTreeError, else err as it was. A cancelled
// step, a full disk and a failure that is no git exit are the worker's.
func taskTreeError(ctx context.Context, task string, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	var ge *gitError
	switch {
	case objectDamage(err):
		return err // the worker's object cache, not the tree (cache.go)
	case TreeFault(err), errors.Is(err, context.DeadlineExceeded):
	case errors.As(err, &ge) && !strings.Contains(ge.output, "No space left on device"):
	default:
		return err
	}
	return &TaskTreeError{Task: task, Err: err}
}
