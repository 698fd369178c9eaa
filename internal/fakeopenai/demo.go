package fakeopenai

import (
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// The demo's small program and its test, both plain bash so the demo runs
// wherever the worker runs (no compiler needed in the workspace).
const (
	demoProgramPath = "greet.sh"
	demoTestPath    = "greet_test.sh"
	demoTestCommand = "bash greet_test.sh"

	demoProgram = `#!/usr/bin/env bash
# greet prints a greeting for the name given as the first argument.
set -euo pipefail
name="${1:-world}"
printf 'Hello, %s!\n' "$name"
`
	demoTest = `#!/usr/bin/env bash
# Tests for greet.sh; exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")"
expect() {
  local want="$1"; shift
  local got
  got="$(bash greet.sh "$@")"
  if [ "$got" != "$want" ]; then
    echo "FAIL: greet.sh $* printed '$got', want '$want'"
    exit 1
  fi
  echo "ok: greet.sh $* -> $got"
}
expect "Hello, world!"
expect "Hello, Ralph!" Ralph
echo PASS
`
	// demoPassMarker is how run_command reports a successful command.
	demoPassMarker = "exit code: 0\n"
)

// DemoScript plays a plausible two-round coding agent, deciding every answer
// from the request alone (so any number of runs and retries can share one
// server):
//
//   - a round that finds no greet.sh in the workspace (round 1) lists the
//     workspace, writes greet.sh and greet_test.sh, runs the test and reports
//     continue, leaving a re-verification as the next step;
//   - a later round lists the workspace, reads greet.sh, runs the test and
//     reports complete when it passes (blocked, naming the failure, when not).
//
// The round comes from "Round R of N" in the prompt; the step is the number
// of assistant turns so far. When only submit_report is offered, or the plan
// is done, it submits its report. A campaign demo task's objective gets its
// own one-round play (demo_campaign.go).
func DemoScript() Script {
	return Script{Rule: demoAnswer}
}

func demoAnswer(req Request) Response {
	if req.IsPlanner() {
		return DemoPlanner(req) // the planning demo (plan.go)
	}
	if task, ok := campaignTaskOf(req); ok {
		return campaignAnswer(req, task)
	}
	msgs := req.Chat.Messages
	round, step := req.Round(), req.Step()
	reportOnly := len(req.Chat.Tools) == 1
	results := toolResults(msgs)

	building := round <= 1
	if listing, ok := results["list_files"]; ok && !strings.Contains(listing, demoProgramPath) {
		building = true // a later round on an empty workspace starts over
	}
	var plan []Response
	if building {
		plan = []Response{
			{Reasoning: "A fresh worker must inspect the workspace before changing it.", ToolCalls: []Call{CallJSON("list_files", map[string]string{})}},
			{Reasoning: "Nothing to keep yet; start with the program.", ToolCalls: []Call{CallJSON("write_file", map[string]string{"path": demoProgramPath, "content": demoProgram})}},
			{Content: "Now a test that pins the behaviour.", ToolCalls: []Call{CallJSON("write_file", map[string]string{"path": demoTestPath, "content": demoTest})}},
			{Reasoning: "Verify before reporting.", ToolCalls: []Call{CallJSON("run_command", map[string]any{"command": demoTestCommand, "timeout_seconds": 30})}},
		}
	} else {
		plan = []Response{
			{Reasoning: "The handoff is a claim; the workspace is the truth. Look first.", ToolCalls: []Call{CallJSON("list_files", map[string]string{})}},
			{ToolCalls: []Call{CallJSON("read_file", map[string]string{"path": demoProgramPath})}},
			{Reasoning: "Re-run the test rather than trusting the previous report.", ToolCalls: []Call{CallJSON("run_command", map[string]any{"command": demoTestCommand, "timeout_seconds": 30})}},
		}
	}
	if step < len(plan) && !reportOnly {
		return plan[step]
	}
	return Response{
		Reasoning: "Summarise what the workspace shows for the next worker.",
		ToolCalls: []Call{SubmitReport(demoReport(building, results["run_command"]))},
	}
}

func demoReport(building bool, testOutput string) ReportArgs {
	passed := strings.Contains(testOutput, demoPassMarker)
	evidence := []string{}
	if passed {
		evidence = append(evidence, demoTestCommand+": exit code 0, PASS")
	}
	switch {
	case building && passed:
		return ReportArgs{
			Status:    "continue",
			Summary:   "Wrote greet.sh (prints Hello, <name>!, default world) and greet_test.sh; the test passes.",
			Evidence:  evidence,
			NextSteps: []string{"Review greet.sh against the objective and re-run " + demoTestCommand + " before reporting completion."},
		}
	case building:
		return ReportArgs{
			Status:    "continue",
			Summary:   "Wrote greet.sh and greet_test.sh, but the test does not pass yet.",
			NextSteps: []string{"Fix greet.sh until " + demoTestCommand + " passes."},
		}
	case passed:
		return ReportArgs{
			Status:   "complete",
			Summary:  "Verified greet.sh: it prints the greeting and its test passes.",
			Evidence: append(evidence, "read greet.sh: prints Hello, <name>! with world as the default name"),
		}
	default:
		return ReportArgs{
			Status:  "blocked",
			Summary: "greet.sh exists but its test fails.",
			Blocker: demoTestCommand + " fails: " + firstLine(testOutput),
		}
	}
}

// toolResults maps each tool name to the content of its latest result.
func toolResults(msgs []openai.ChatCompletionMessage) map[string]string {
	names := map[string]string{}
	out := map[string]string{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		if m.Role == openai.ChatMessageRoleTool {
			out[names[m.ToolCallID]] = m.Content
		}
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "no output"
	}
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}
