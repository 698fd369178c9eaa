package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/internal/netproxy"
)

// OutputDrainTimeout bounds how long run_command waits for the output pipe
// to close after the command's process group is dead. Only a process that
// escaped the group (setsid, a daemon) can keep it open that long.
const OutputDrainTimeout = 2 * time.Second

type runCommandParams struct {
	Command        string   `json:"command" description:"Shell command, run with bash -c in the workspace directory."`
	TimeoutSeconds *float64 `json:"timeout_seconds,omitempty" description:"Timeout in seconds; the default and the maximum are in the tool description."` // pointer: absent means the default
}

type runCommandTool struct {
	spec[runCommandParams]
	w *Workspace
}

// execOutcome is what running one command produced.
type execOutcome struct {
	output     string // already truncated to the output cap
	exitCode   int
	signal     string // set when the command was killed by a signal
	timedOut   bool
	incomplete bool              // the output pipe was still held open after the drain timeout
	memoryKill string            // why the cgroup's OOM killer ended it ("" if it did not)
	diskKill   string            // which disk bound it passed ("" if none)
	network    []netproxy.Record // the connections it asked the sandbox's proxy for
}

func (t runCommandTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	p, err := t.decode(args)
	if err != nil {
		return failf("%v", err), nil
	}
	if strings.TrimSpace(p.Command) == "" {
		return failf("invalid arguments for run_command: missing required argument \"command\""), nil
	}
	timeout, note, err := t.w.limits.commandTimeout(p.TimeoutSeconds)
	if err != nil {
		return failf("run_command: %v", err), nil
	}

	o, err := t.w.execute(ctx, p.Command, timeout, t.w.limits.OutputCap, false, "")
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	b.WriteString(note)
	if o.timedOut {
		fmt.Fprintf(&b, "command timed out after %s and was killed together with every process it started\n", seconds(timeout))
		b.WriteString("output before the timeout:\n")
	} else if o.diskKill != "" {
		fmt.Fprintf(&b, "exit code: %d (%s)\n", o.exitCode, o.diskKill)
	} else if o.memoryKill != "" {
		fmt.Fprintf(&b, "exit code: %d (%s)\n", o.exitCode, o.memoryKill)
	} else if o.signal != "" {
		fmt.Fprintf(&b, "exit code: %d (killed by signal %s)\n", o.exitCode, o.signal)
	} else {
		fmt.Fprintf(&b, "exit code: %d\n", o.exitCode)
	}
	if o.output == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(o.output)
	}
	if o.incomplete {
		b.WriteString("\n[output may be incomplete: a process that left the command's process group kept the output open]\n")
	}
	return Result{Output: b.String(), Failed: o.timedOut || o.memoryKill != "" || o.diskKill != "", Network: o.network}, nil
}

// seconds formats a duration as seconds the way the model is asked for them.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%gs", d.Seconds())
}
