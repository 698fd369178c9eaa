package fakeopenai

import (
	"regexp"
	"strings"
)

// The campaign demo (`make demo-campaign`): each task's objective names a
// file and a line to add after its first line, so the scripted model's
// edits are decided by the objective alone and two tasks adding to the same
// file conflict for real. A later go reads the file the campaign merged the
// integration branch into; when it holds conflict markers it keeps both
// sides, which is the merge this demo wants.

// campaignTaskPattern is a campaign demo task's objective.
var campaignTaskPattern = regexp.MustCompile(`In (\S+), add the line "([^"]+)" after the first line`)

// verifyPattern finds the round's verify command in its prompt.
var verifyPattern = regexp.MustCompile("the round runs `([^`]+)` in the workspace")

// campaignTask is what a campaign demo task's objective asks for.
type campaignTask struct {
	path, line string
}

// campaignTaskOf reads the objective of the request's prompt.
func campaignTaskOf(req Request) (campaignTask, bool) {
	prompt := req.Prompt()
	_, objective, ok := strings.Cut(prompt, "Objective:\n")
	if !ok {
		return campaignTask{}, false
	}
	objective, _, _ = strings.Cut(objective, "\n\n")
	m := campaignTaskPattern.FindStringSubmatch(objective)
	if m == nil {
		return campaignTask{}, false
	}
	return campaignTask{path: m[1], line: m[2]}, true
}

// campaignAnswer plays one go of a campaign demo task in one round: look,
// read the file, write it with the line added (or its conflict resolved),
// run the verify command, report.
func campaignAnswer(req Request, task campaignTask) Response {
	results := toolResults(req.Chat.Messages)
	verify := "bash check.sh"
	if m := verifyPattern.FindStringSubmatch(req.Prompt()); m != nil {
		verify = m[1]
	}
	content, conflicted := task.edit(fileLines(results["read_file"]))
	plan := []Response{
		{Reasoning: "Look at the workspace first.", ToolCalls: []Call{CallJSON("list_files", map[string]string{})}},
		{ToolCalls: []Call{CallJSON("read_file", map[string]string{"path": task.path})}},
		{ToolCalls: []Call{CallJSON("write_file", map[string]string{"path": task.path, "content": content})}},
		{Reasoning: "Verify before reporting.", ToolCalls: []Call{CallJSON("run_command", map[string]any{"command": verify, "timeout_seconds": 30})}},
	}
	step := req.Step()
	if step < len(plan) && len(req.Chat.Tools) > 1 {
		return plan[step]
	}
	named := strings.Contains(previousReport(req.Prompt()), task.path)
	return Response{ToolCalls: []Call{SubmitReport(task.report(verify, results["run_command"], conflicted, named))}}
}

// previousReport is the handoff part of a round prompt ("" in a first round).
func previousReport(prompt string) string {
	_, prev, _ := strings.Cut(prompt, "Previous worker's handoff report")
	prev, _, _ = strings.Cut(prev, "Bounds of this round:")
	return prev
}

// fileLines is the text read_file showed ("NNNNNN\tline" rows), or nil
// when it showed no file.
func fileLines(shown string) []string {
	var lines []string
	for _, row := range strings.Split(shown, "\n") {
		_, text, ok := strings.Cut(row, "\t")
		if ok && strings.TrimSpace(row[:strings.IndexByte(row, '\t')]) != "" {
			lines = append(lines, text)
		}
	}
	return lines
}

// edit is the file's new content: conflict markers resolved by keeping
// both sides in order; the task's line added after the first line unless
// it is there already. conflicted says markers were found.
func (t campaignTask) edit(lines []string) (string, bool) {
	var kept []string
	conflicted := false
	inBase := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "<<<<<<< "), strings.HasPrefix(l, ">>>>>>> "):
			conflicted, inBase = true, false
		case strings.HasPrefix(l, "||||||| "):
			inBase = true // diff3's common ancestor: neither side keeps it
		case l == "=======":
			inBase = false
		case !inBase:
			kept = append(kept, l)
		}
	}
	present := false
	for _, l := range kept {
		present = present || l == t.line
	}
	if !present {
		at := min(1, len(kept))
		kept = append(kept[:at], append([]string{t.line}, kept[at:]...)...)
	}
	return strings.Join(kept, "\n") + "\n", conflicted
}

func (t campaignTask) report(verify, output string, conflicted, named bool) ReportArgs {
	if !strings.Contains(output, demoPassMarker) {
		return ReportArgs{Status: "blocked", Summary: "Edited " + t.path + " but " + verify + " fails.",
			Blocker: verify + " fails: " + firstLine(output)}
	}
	summary := "Added the line \"" + t.line + "\" to " + t.path + "."
	if conflicted {
		summary = "Resolved the merge conflict in " + t.path + " by keeping both sides, with the line \"" + t.line + "\"."
		if named {
			summary = "The previous report named " + t.path + " as conflicting: " + strings.ToLower(summary[:1]) + summary[1:]
		}
	}
	return ReportArgs{Status: "complete", Summary: summary,
		Evidence: []string{verify + ": exit code 0", "wrote " + t.path}}
}
