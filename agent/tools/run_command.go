package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// OutputDrainTimeout bounds how long run_command waits for the output pipe
// to close after the command's process group is dead. Only a process that
// escaped the group (setsid, a daemon) can keep it open that long.
const OutputDrainTimeout = 2 * time.Second

type runCommandParams struct {
	Command        string   `json:"command"`
	TimeoutSeconds *float64 `json:"timeout_seconds"` // pointer: absent means the default
}

type runCommandTool struct{ w *Workspace }

func (runCommandTool) Name() string { return "run_command" }

func (t runCommandTool) Description() string {
	l := t.w.limits
	return fmt.Sprintf("Run a shell command with `bash -c` in the workspace directory, with empty stdin. "+
		"Returns the exit code and the combined stdout and stderr; output longer than %d characters keeps its beginning and end and cuts the middle. "+
		"The command is killed, together with every process it started, when it exceeds its timeout (default %s, at most %s). "+
		"Background processes do not survive the call: everything the command started is killed when it returns. "+
		"A non-zero exit code is reported, not treated as a tool failure.",
		l.OutputCap, seconds(l.CommandTimeout), seconds(l.MaxCommandTimeout))
}

func (runCommandTool) Parameters() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "Shell command, run with bash -c in the workspace directory."},
    "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "description": "Timeout in seconds; defaults and maximum are given in the tool description."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)
}

// execOutcome is what running one command produced.
type execOutcome struct {
	output     string // already truncated to the output cap
	exitCode   int
	signal     string // set when the command was killed by a signal
	timedOut   bool
	incomplete bool // the output pipe was still held open after the drain timeout
}

func (t runCommandTool) Run(ctx context.Context, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var p runCommandParams
	if err := decodeArgs(t.Name(), args, &p); err != nil {
		return failf("%v", err), nil
	}
	if strings.TrimSpace(p.Command) == "" {
		return failf("invalid arguments for run_command: missing required argument \"command\""), nil
	}
	timeout := t.w.limits.CommandTimeout
	var note string
	if p.TimeoutSeconds != nil {
		s := *p.TimeoutSeconds
		if s <= 0 || math.IsNaN(s) {
			return failf("run_command: timeout_seconds must be positive"), nil
		}
		if maxT := t.w.limits.MaxCommandTimeout; s >= maxT.Seconds() {
			if s > maxT.Seconds() {
				note = fmt.Sprintf("[timeout_seconds capped to %s]\n", seconds(maxT))
			}
			timeout = maxT
		} else {
			timeout = time.Duration(s * float64(time.Second))
		}
	}

	o, err := t.w.execute(ctx, p.Command, timeout, t.w.limits.OutputCap)
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	b.WriteString(note)
	if o.timedOut {
		fmt.Fprintf(&b, "command timed out after %s and was killed together with every process it started\n", seconds(timeout))
		b.WriteString("output before the timeout:\n")
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
	return Result{Output: b.String(), Failed: o.timedOut}, nil
}

// seconds formats a duration as seconds the way the model is asked for them.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%gs", d.Seconds())
}
