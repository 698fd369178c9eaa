package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/report"
)

// role is what a session is for: a worker hands off a report, an
// independent reviewer a verdict on an accepted completion (review.go).
// The session's loop, bounds and tools are the same for both; the role
// supplies everything that differs.
type role interface {
	// finishing is the name of the tool that ends the session.
	finishing() string
	// texts names the role's prompts and notices.
	texts() roleTexts
	// prompt is the round's first user message.
	prompt(rd *round) (string, error)
	// workspace opens the session's workspace with the role's guards, and
	// the snapshot of its protected paths.
	workspace(cfg Config, req Request) (*tools.Workspace, *tools.ProtectedSnapshot, error)
	// restoredNote is what the hand-off notice says about protected paths
	// restored at the hand-off ("": nothing).
	restoredNote(paths []string) string
	// submit checks a call of the finishing tool: the answer to the model,
	// and the report when it ends the session. An error ends the session.
	submit(ctx context.Context, rd *round, step int, args string) (tools.Result, *report.Report, error)
}

// roleTexts names the template files (texts.go) of a role.
type roleTexts struct {
	system, reminder, finalReminder, handoff string
}

// roleFor is the role req asks for: a reviewer when it carries a subject.
func roleFor(req Request) role {
	if req.Review != nil {
		return reviewer{subject: req.Review}
	}
	if req.Plan != nil {
		return planner{subject: req.Plan}
	}
	return worker{}
}

// worker is the role of an ordinary round: work in the workspace, then
// hand off through submit_report.
type worker struct{}

func (worker) finishing() string { return SubmitReportTool }

func (worker) texts() roleTexts {
	return roleTexts{system: textSystem, reminder: textReminder, finalReminder: textFinalReminder, handoff: textHandoff}
}

func (worker) prompt(rd *round) (string, error) { return rd.roundPrompt() }

func (worker) workspace(cfg Config, req Request) (*tools.Workspace, *tools.ProtectedSnapshot, error) {
	return open(req, cfg, []tools.Option{tools.WithSandbox(cfg.Sandbox)}, req.ProtectedPaths)
}

func (worker) restoredNote(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	return fmt.Sprintf("\nProtected paths this round changed were restored to their state at the start of the round (they may be read but not changed): %s. Report where the work stands without those changes.",
		strings.Join(paths, ", "))
}

// submit checks a report. Each rejection names the exact rule broken and
// spends one repair; past the bound the round ends as a child failure. A
// valid complete report is accepted only when the verify command (if one
// applies) passes; a failed check is a refusal, not a repair.
func (worker) submit(ctx context.Context, rd *round, step int, args string) (tools.Result, *report.Report, error) {
	r, err := checkReport(args, rd.req.handoffCap())
	if err != nil {
		res, ferr := rd.rejected("report", err)
		return res, nil, ferr
	}
	if refusal, err := rd.protectedRefusal(); err != nil || refusal != "" {
		if refusal != "" {
			rd.lastRejection = "protected paths were changed and restored"
		}
		return tools.Result{Output: refusal, Failed: true}, nil, err
	}
	if r.Status == report.StatusComplete && rd.req.VerifyCommand != "" {
		v, refusal, err := rd.verifyComplete(ctx, step)
		if err != nil {
			return tools.Result{}, nil, err
		}
		if v == nil {
			rd.lastRejection = "the verify command did not pass"
			return tools.Result{Output: refusal, Failed: true}, nil, nil
		}
		// Again after verify: what passed must be what the round hands over.
		if refusal, err := rd.protectedRefusal(); err != nil || refusal != "" {
			if refusal != "" {
				rd.lastRejection = "protected paths were changed and restored"
			}
			return tools.Result{Output: refusal, Failed: true}, nil, err
		}
		rd.verification = v
		return tools.Result{Output: "Report accepted: the verify command passed (exit 0). The round is over."}, &r, nil
	}
	return tools.Result{Output: "Report accepted. The round is over."}, &r, nil
}
