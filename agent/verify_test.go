package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

var validComplete = fakeopenai.ReportArgs{
	Status: "complete", Summary: "hello.txt holds hello.", Evidence: []string{"cat hello.txt printed hello"},
}

func verifyEvents(h *harness) (calls, results []agent.Event) {
	for _, e := range h.events.all() {
		switch e.Kind {
		case agent.EventVerifyStart:
			calls = append(calls, e)
		case agent.EventVerifyResult:
			results = append(results, e)
		}
	}
	return calls, results
}

func TestVerifyPassAcceptsComplete(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		call("write_file", map[string]string{"path": "hello.txt", "content": "hello\n"}),
		submit(validComplete),
	}})
	h.req.VerifyCommand = "grep -q hello hello.txt && echo verified"
	res, err := h.run()
	if err != nil || res.Report.Status != "complete" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	v := res.Verification
	if v == nil || v.Command != h.req.VerifyCommand || v.ExitCode != 0 || v.Output != "verified\n" || v.DurationMs <= 0 {
		t.Fatalf("verification = %+v", v)
	}
	calls, results := verifyEvents(h)
	if len(calls) != 1 || len(results) != 1 || results[0].Failed || results[0].ExitCode == nil || *results[0].ExitCode != 0 {
		t.Errorf("verify events = %+v / %+v", calls, results)
	}
	if n := len(h.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (none after the passing check)", n)
	}
}

func TestVerifyRefusalIsNotARepair(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{
		submit(validComplete), // too early: nothing written yet
		call("write_file", map[string]string{"path": "hello.txt", "content": "hello\n"}),
		submit(validComplete),
	}})
	h.req.VerifyCommand = "cat hello.txt"
	h.cfg.MaxRepairs = 0
	res, err := h.run()
	if err != nil || res.Verification == nil || res.Verification.ExitCode != 0 {
		t.Fatalf("result = %+v, %v; want the second complete accepted", res, err)
	}
	refusal := toolMessages(h.requests()[1])[0].Content
	for _, want := range []string{"Completion refused: the verify command failed", "Command: cat hello.txt", "Exit code: 1.",
		"No such file or directory", "2 verification(s) left"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("refusal lacks %q:\n%s", want, refusal)
		}
	}
	_, results := verifyEvents(h)
	if len(results) != 2 || !results[0].Failed || *results[0].ExitCode != 1 || results[1].Failed {
		t.Errorf("verify results = %+v", results)
	}
}

func TestVerifyTimeout(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validComplete), submit(validContinue)}})
	h.req.VerifyCommand = "echo started; sleep 30"
	h.cfg.VerifyTimeout = 300 * time.Millisecond
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" || res.Verification != nil {
		t.Fatalf("result = %+v, %v", res, err)
	}
	refusal := toolMessages(h.requests()[1])[0].Content
	if !strings.Contains(refusal, "timed out after 300ms and was killed (exit code -1)") || !strings.Contains(refusal, "started") {
		t.Errorf("refusal lacks the timeout, the exit code -1 or the output: %q", refusal)
	}
	if _, results := verifyEvents(h); len(results) != 1 || *results[0].ExitCode != -1 {
		t.Errorf("verify results = %+v", results)
	}
}

func TestVerifyAttemptsExhausted(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
		if r.Index < 3 {
			return submit(validComplete)
		}
		return submit(validContinue)
	}})
	h.req.VerifyCommand = "echo ran >> verify.count; exit 3"
	h.cfg.VerifyAttempts = 2
	res, err := h.run()
	if err != nil || res.Report.Status != "continue" {
		t.Fatalf("result = %+v, %v; want the continue hand-off", res, err)
	}
	data, _ := os.ReadFile(filepath.Join(h.req.Workspace, "verify.count"))
	if n := strings.Count(string(data), "ran"); n != 2 {
		t.Errorf("the verify command ran %d times, want VerifyAttempts = 2", n)
	}
	third := toolMessages(h.requests()[3])[2].Content
	if !strings.Contains(third, "Completion refused without running the verify command: it already failed 2 time(s)") {
		t.Errorf("third refusal = %q", third)
	}
	second := toolMessages(h.requests()[2])[1].Content
	if !strings.Contains(second, "Exit code: 3.") || !strings.Contains(second, "No verifications are left") {
		t.Errorf("second refusal = %q", second)
	}
}

func TestVerifyOutputIsBoundedHeadAndTail(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validComplete), submit(validContinue)}})
	h.req.VerifyCommand = "echo HEAD-MARK; for i in $(seq 5000); do printf 'éééé'; done; echo; echo TAIL-MARK; exit 1"
	if _, err := h.run(); err != nil {
		t.Fatal(err)
	}
	_, results := verifyEvents(h)
	if len(results) != 1 {
		t.Fatalf("verify results = %+v", results)
	}
	out := results[0].Output
	if n := utf8.RuneCountInString(out); n > report.MaxVerificationOutput || n < report.MaxVerificationOutput/2 {
		t.Errorf("verify output is %d code points, want at most %d (and not much less)", n, report.MaxVerificationOutput)
	}
	refusal := toolMessages(h.requests()[1])[0].Content
	for _, want := range []string{"HEAD-MARK", "TAIL-MARK", "characters cut"} {
		if !strings.Contains(out, want) || !strings.Contains(refusal, want) {
			t.Errorf("output or refusal lacks %q", want)
		}
	}
}

func TestNoVerifyCommandAcceptsCompleteUnchecked(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validComplete)}})
	res, err := h.run()
	if err != nil || res.Report.Status != "complete" || res.Verification != nil {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if calls, _ := verifyEvents(h); len(calls) != 0 {
		t.Errorf("verify ran without a command: %+v", calls)
	}
}

func TestCancelDuringVerifyKillsIt(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validComplete)}})
	h.req.VerifyCommand = "sleep 300 & echo $! > verify.pid; wait"
	pidFile := filepath.Join(h.req.Workspace, "verify.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pid := testkit.CancelOnPID(t, pidFile, cancel)
	_, err := h.runCtx(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	waitGone(t, pid())
}

func TestCompleteDuringForcedHandoffIsStillVerified(t *testing.T) {
	for _, tc := range []struct {
		name   string
		passes bool
	}{{"check fails: continue follows", false}, {"check passes: complete accepted", true}} {
		t.Run(tc.name, func(t *testing.T) {
			completes := 0
			h := newHarness(t, fakeopenai.Script{Rule: func(r fakeopenai.Request) fakeopenai.Response {
				switch {
				case len(r.Chat.Tools) > 1:
					return call("run_command", map[string]any{"command": "echo same"})
				case completes == 0:
					completes++
					return submit(validComplete)
				default:
					return submit(validContinue)
				}
			}})
			h.req.VerifyCommand = "test -f ok.txt"
			if tc.passes {
				if err := os.WriteFile(filepath.Join(h.req.Workspace, "ok.txt"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := h.run()
			if err != nil {
				t.Fatal(err)
			}
			if hs := h.events.ofKind(agent.EventHandoff); len(hs) != 1 || hs[0].Bound != agent.BoundLoop {
				t.Fatalf("handoff events = %+v", hs)
			}
			if _, results := verifyEvents(h); len(results) != 1 {
				t.Fatalf("the verify command ran %d times during the hand-off, want 1", len(results))
			}
			if tc.passes {
				if res.Report.Status != "complete" || res.Verification == nil {
					t.Errorf("result = %+v", res)
				}
				return
			}
			if res.Report.Status != "continue" || res.Verification != nil {
				t.Errorf("result = %+v, want the continue that followed the refusal", res)
			}
			reqs := h.requests()
			refusal := lastMessage(reqs[len(reqs)-1]).Content
			if !strings.Contains(refusal, "Only submit_report is available now: hand off with continue") {
				t.Errorf("refusal during the hand-off = %q", refusal)
			}
		})
	}
}
