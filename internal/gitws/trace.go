package gitws

import (
	"sync/atomic"
	"time"
)

// TracedCommand is one git command the worker ran, for Trace: the
// worker's git runs with a scrubbed environment (stepEnv), so GIT_TRACE2
// set around the worker never reaches it.
type TracedCommand struct {
	Dir  string
	Args []string // without the overrides every command carries; credentials removed
	Took time.Duration
	// CPU is the user and system time of the command and of the processes
	// it waited for (the wrapper that moves it into its control group,
	// and git's own helpers such as index-pack).
	CPU time.Duration
	Err error
}

var tracer atomic.Pointer[func(TracedCommand)]

// Trace calls f after every git command any Git of this process runs, until
// the returned func is called. For tests and benchmarks that count a step's
// commands; f must be safe for concurrent use.
func Trace(f func(TracedCommand)) (stop func()) {
	tracer.Store(&f)
	return func() { tracer.CompareAndSwap(&f, nil) }
}

func traced(dir string, args []string, took, cpu time.Duration, err error) {
	if f := tracer.Load(); f != nil {
		(*f)(TracedCommand{Dir: dir, Args: args, Took: took, CPU: cpu, Err: err})
	}
}

func redactArgs(args []string, remote string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = redactText(a, remote)
	}
	return out
}
