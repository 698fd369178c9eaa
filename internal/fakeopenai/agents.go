package fakeopenai

import (
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// AgentScript plays a coding-agent CLI's model (docs/agents.md): each
// round it runs Command (or each of Commands in turn) through whatever
// shell tool the CLI offers (Bash, bash, exec_command, shell), then calls
// the report tool the worker's MCP
// server gave the CLI (its name ends in submit_report) with Report; a
// reviewer's CLI approves through submit_review, a planner's submits Plan
// through submit_plan. A request without tools (opencode's title request)
// gets a short text.
type AgentScript struct {
	// Command is what round runs first ("": report at once).
	Command func(round int) string
	// Commands, when set, are what round runs one after another, each once
	// the previous one's output came back (in place of Command).
	Commands func(round int) []string
	// Report is the report of round, given the shell's output.
	Report func(round int, shellOutput string) ReportArgs
	// Usage, when set, is every answer's usage.
	Usage *openai.Usage
	// Plan is a planner's plan, given the shell's output (nil: one task).
	Plan func(shellOutput string) PlanArgs
}

// shellTools are the shell tools of the CLIs, as their models see them.
var shellTools = []string{"Bash", "bash", "exec_command", "shell"}

// Rule answers one request of the CLI.
func (a AgentScript) Rule(req Request) Response {
	r := a.answer(req)
	r.Usage = a.Usage
	return r
}

func (a AgentScript) answer(req Request) Response {
	if len(req.Chat.Tools) == 0 {
		return Text("Ralph round")
	}
	round := agentRound(req)
	report := req.OfferedTool("submit_report")
	shell := req.ShellTool()
	results := toolMessages(req)
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	if strings.Contains(last, "Report accepted") || strings.Contains(last, "Plan accepted") {
		return Text("Done.")
	}
	cmds := a.commands(round)
	if review := req.OfferedTool("submit_review"); review != "" && (len(results) > 0 || len(cmds) == 0 || shell == "") {
		return Tools(CallJSON(review, map[string]any{"verdict": "approve", "summary": "The objective is met.", "findings": []string{}}))
	}
	if plan := req.OfferedTool("submit_plan"); plan != "" && (len(results) >= len(cmds) || shell == "") {
		return Tools(a.submitPlan(plan, last))
	}
	if len(results) < len(cmds) && shell != "" {
		return Tools(ShellCall(shell, cmds[len(results)]))
	}
	if report == "" {
		return Text("no report tool was offered")
	}
	return Tools(SubmitReportNamed(report, a.Report(round, last)))
}

// submitPlan is the planner's submit_plan call under the CLI's name for it.
func (a AgentScript) submitPlan(name, shellOutput string) Call {
	p := PlanArgs{Status: "tasks", Summary: "One task.", Tasks: []PlanTask{{ID: "only", Objective: "Do the work."}}}
	if a.Plan != nil {
		p = a.Plan(shellOutput)
	}
	c := SubmitPlan(p)
	c.Name = name
	return c
}

func (a AgentScript) commands(round int) []string {
	switch {
	case a.Commands != nil:
		return a.Commands(round)
	case a.Command == nil:
		return nil
	case a.Command(round) == "":
		return nil
	}
	return []string{a.Command(round)}
}

// SubmitReportNamed is SubmitReport under the name the CLI gave the tool.
func SubmitReportNamed(name string, r ReportArgs) Call {
	c := SubmitReport(r)
	c.Name = name
	return c
}

// ShellCall is a call of the CLI's shell tool named tool (as
// req.ShellTool finds it) running cmd, with the arguments that tool takes.
func ShellCall(tool, cmd string) Call {
	return CallJSON(tool, shellArgs(tool, cmd))
}

// ShellTool is the shell tool the CLI offers, "" if none.
func (r Request) ShellTool() string { return r.OfferedTool(shellTools...) }

func shellArgs(tool, cmd string) any {
	switch tool {
	case "exec_command":
		return map[string]any{"cmd": cmd}
	case "shell":
		return map[string]any{"command": []string{"bash", "-lc", cmd}}
	}
	return map[string]any{"command": cmd, "description": "Run the round's command"}
}

// OfferedTool is the offered tool named one of names, or whose name ends in
// "_" plus one of them (an MCP tool carries its server's prefix); "" if none.
func (r Request) OfferedTool(names ...string) string {
	for _, n := range names {
		for _, t := range r.Chat.Tools {
			if t.Function == nil {
				continue
			}
			if got := t.Function.Name; got == n || strings.HasSuffix(got, "_"+n) {
				return got
			}
		}
	}
	return ""
}

// agentRound is R of "Round R of N" anywhere in the request's user text
// (CLIs send text as parts and wrap it in their own prompts).
func agentRound(req Request) int {
	for _, m := range req.Chat.Messages {
		if match := roundPattern.FindStringSubmatch(messageText(m)); match != nil {
			if n, err := strconv.Atoi(match[1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// toolMessages are the contents of the request's tool messages, in order.
func toolMessages(req Request) []string {
	var out []string
	for _, m := range req.Chat.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			out = append(out, messageText(m))
		}
	}
	return out
}

func messageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.MultiContent {
		b.WriteString(p.Text)
	}
	return b.String()
}
