package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-temporal/ralph/internal/tracing"
	"github.com/ralph-temporal/ralph/report"
)

// VerifyTool is the Tool of the verify step's events (EventVerifyStart and
// EventVerifyResult), so heartbeats show lastTool "verify".
const VerifyTool = "verify"

// verifyOutputCap is the head+tail cap handed to the command runner: its
// marker of what was cut comes on top, and the record must stay within
// report.MaxVerificationOutput.
const verifyOutputCap = report.MaxVerificationOutput - 100

type verifyRefusedData struct {
	Command      string
	ExitCode     int
	TimedOut     bool
	Timeout      string
	Output       string
	AttemptsLeft int
	ReportOnly   bool
}

type verifyExhaustedData struct {
	Attempts int
	Command  string
}

// verifyComplete runs the verify command for a valid complete report. It
// runs during a forced hand-off too: a bound reached never turns an unchecked
// claim into an accepted one. A refusal there costs the hand-off one more
// model call (the model must then send continue or blocked); when the bound
// was the last model call none is left and the round ends as a child
// failure, so the hand-off notice tells the model to claim complete only
// when it knows the check passes. The check started before the time bound
// ends by it; one started after it gets at most half the time left.
//
// It
// returns the passing record, or the tool result refusing the completion
// (not a repair: the session goes on). A Go error means ctx ended or the
// harness failed.
func (r *round) verifyComplete(ctx context.Context, step int) (*report.Verification, string, error) {
	if r.verifyFailures >= r.cfg.VerifyAttempts {
		text, err := render(textVerifyExhausted, verifyExhaustedData{Attempts: r.verifyFailures, Command: r.req.VerifyCommand})
		return nil, text, err
	}
	timeout := r.bounds.verifyTimeout(r.cfg.VerifyTimeout, time.Now())
	r.emit(Event{Kind: EventVerifyStart, Step: step, Tool: VerifyTool, Arguments: r.req.VerifyCommand})
	ctx, span := r.cfg.Tracing.Start(ctx, tracing.SpanVerify)
	defer span.End()
	res, err := r.ws.ExecFreshHome(ctx, r.req.VerifyCommand, timeout, verifyOutputCap)
	if err != nil {
		tracing.Fail(span, "harness", Redact(err.Error(), r.cfg.APIKey))
		return nil, "", err
	}
	_ = res.ToolCache.Remove() // only a landed merge's verify writes a line
	r.emitNetwork(step, VerifyTool, "", res.Network)
	v := report.Verification{Command: r.req.VerifyCommand, ExitCode: res.ExitCode, DurationMs: durationMs(res.Duration), Output: res.Output}
	if res.TimedOut {
		v.ExitCode = -1
	}
	span.SetAttributes(tracing.AttrVerifyExit.Int(v.ExitCode), tracing.AttrVerifyPassed.Bool(v.Passed()))
	if !v.Passed() {
		tracing.Fail(span, "verify_failed", fmt.Sprintf("the verify command exited %d", v.ExitCode))
	}
	r.emit(Event{Kind: EventVerifyResult, Step: step, Tool: VerifyTool, Output: v.Output, Failed: !v.Passed(),
		ExitCode: &v.ExitCode, DurationMs: v.DurationMs})
	if v.Passed() {
		return &v, "", nil
	}
	r.verifyFailures++
	text, err := render(textVerifyRefused, verifyRefusedData{
		Command: v.Command, ExitCode: v.ExitCode, TimedOut: res.TimedOut, Timeout: humanDuration(timeout),
		Output: orNoOutput(v.Output), AttemptsLeft: r.cfg.VerifyAttempts - r.verifyFailures, ReportOnly: r.bounds.reportOnly,
	})
	return nil, text, err
}

func orNoOutput(s string) string {
	if s == "" {
		return "(no output)"
	}
	return s
}
