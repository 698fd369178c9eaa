package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/trace"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/report"
)

// Loop detection: the same tool with the same arguments, call after call
// with nothing else in between, cannot produce anything new.
const (
	// RepeatWarnAfter: this identical call in a row is not run; the model is
	// told it is looping.
	RepeatWarnAfter = 4
	// RepeatHandoffAfter: this identical call in a row is not run either,
	// and the hand-off is forced (BoundLoop).
	RepeatHandoffAfter = 6
)

// runTools runs one answer's tool calls in order, answering each with a
// tool message. A valid report ends the session at once: later calls of the
// same answer are not run and no further model call is made. Tools run
// under the time bound (a command still running when it passes is
// stopped, so the hand-off keeps its time); the verify command runs under
// ctx.
func (s *session) runTools(ctx context.Context, step int, calls []openai.ToolCall) (report.Report, bool, error) {
	toolCtx, cancel := s.bounds.toolContext(ctx)
	defer cancel()
	for _, call := range calls {
		s.usage.ToolCalls++
		name, args := call.Function.Name, call.Function.Arguments
		s.conv.logCall(name, args)
		s.emit(Event{Kind: EventToolCall, Step: step, Tool: name, ToolCallID: call.ID, Arguments: args})
		rep, done, err := s.runTool(ctx, toolCtx, step, call)
		if err != nil || done {
			return rep, done, err
		}
	}
	return report.Report{}, false, nil
}

// runTool runs one call under its execute_tool span and answers it.
func (s *session) runTool(ctx, toolCtx context.Context, step int, call openai.ToolCall) (report.Report, bool, error) {
	name, args := call.Function.Name, call.Function.Arguments
	spanCtx, span := s.cfg.Tracing.StartTool(ctx, name, call.ID)
	defer span.End()
	started := time.Now()
	res, rep, err := s.dispatch(spanCtx, trace.ContextWithSpan(toolCtx, span), step, name, args)
	if err != nil && res.Output == "" {
		s.traceToolResult(span, args, res, "", err)
		return report.Report{}, false, err
	}
	s.emitNetwork(step, name, call.ID, res.Network)
	content := toolContent(res)
	s.traceToolResult(span, args, res, content, err)
	s.conv.appendToolResult(call.ID, content)
	s.emit(Event{Kind: EventToolResult, Step: step, Tool: name, ToolCallID: call.ID, Output: content, Failed: res.Failed,
		DurationMs: durationMs(time.Since(started))})
	if err != nil {
		return report.Report{}, false, err
	}
	if rep != nil {
		return *rep, true, nil
	}
	return report.Report{}, false, nil
}

// dispatch runs one call. A tool's own failure is a Result for the model; an
// error ends the session (with a Result still shown to the model when the
// error is a child failure the model caused).
func (s *session) dispatch(ctx, toolCtx context.Context, step int, name, args string) (tools.Result, *report.Report, error) {
	if name == s.role.finishing() {
		s.repeat.reset()
		return s.role.submit(ctx, s.round, step, args)
	}
	switch n := s.repeat.observe(name, args); {
	case n >= RepeatHandoffAfter:
		s.bounds.pend(BoundLoop)
		return failed("you called %s with identical arguments %d times in a row, so it was not run again; "+
			"you are looping, and this round now ends with your handoff report.", name, n), nil, nil
	case n >= RepeatWarnAfter:
		return failed("you called %s with identical arguments %d times in a row with nothing in between, so it was not run again: "+
			"the result would not change. You are looping; take a different step, or call submit_report.", name, n), nil, nil
	}
	if s.bounds.reportOnly {
		return failed("only submit_report is available now; call it with your handoff report"), nil, nil
	}
	t, ok := s.tools.byName[name]
	if !ok {
		return failed("unknown tool %q; the available tools are %s", name, strings.Join(s.tools.names, ", ")), nil, nil
	}
	if strings.TrimSpace(args) == "" {
		args = "{}" // some providers send "" for a call without arguments
	}
	if err := checkJSON(args); err != nil {
		return failed("the arguments of %s are not valid JSON (%v); send one JSON object matching the tool's parameters", name, err), nil, nil
	}
	res, err := t.Run(toolCtx, json.RawMessage(args))
	if err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, nil, ctx.Err()
		}
		if errors.Is(context.Cause(toolCtx), errHandoffTime) {
			return failed("%s was stopped: the time for work in this round is spent; what is left is kept for your handoff report", name), nil, nil
		}
		return tools.Result{}, nil, fmt.Errorf("tool %s failed in the harness: %w", name, err)
	}
	return res, nil, nil
}

func failed(format string, args ...any) tools.Result {
	return tools.Result{Output: fmt.Sprintf(format, args...), Failed: true}
}

// toolContent is the tool message's text: never empty (providers reject or
// mishandle empty tool messages), failures marked as errors.
func toolContent(r tools.Result) string {
	out := r.Output
	if strings.TrimSpace(out) == "" {
		out = "(no output)"
		if r.Failed {
			out = "the tool failed without output"
		}
	}
	if r.Failed {
		out = "error: " + out
	}
	return out
}

func checkJSON(args string) error {
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return err
	}
	return nil
}

// repeatGuard counts identical consecutive calls.
type repeatGuard struct {
	key   string
	count int
}

func (g *repeatGuard) observe(name, args string) int {
	key := name + "\x00" + canonicalJSON(args)
	if key == g.key {
		g.count++
	} else {
		g.key, g.count = key, 1
	}
	return g.count
}

func (g *repeatGuard) reset() { g.key, g.count = "", 0 }

// canonicalJSON ignores whitespace differences between identical calls.
func canonicalJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}
