package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/report"
)

// SubmitPlanTool is a campaign planner's only way to end its session.
const SubmitPlanTool = "submit_plan"

// PlanSubject makes a session a campaign wave's planner (SPEC 40): what it
// sees besides the objective and the checkout, and the rules its plan
// meets.
type PlanSubject struct {
	Wave int
	// Head is the integration head the checkout holds.
	Head string
	// Report is the last wave's report, already fitted to the handoff cap
	// (nil: the first wave).
	Report *plan.WaveReport
	// Rejected is a person's reason for rejecting the wave's last plan.
	Rejected string
	Rules    plan.Rules
}

// planParams is submit_plan's parameter schema as a tagged struct;
// plan.Decode (strict: these five keys, each task's three) decodes the
// arguments.
type planParams struct {
	Status   string           `json:"status" enum:"tasks,complete,blocked" description:"tasks: the next wave's tasks; complete: the objective is met on the integration head; blocked: nothing a coding agent can do moves it."`
	Summary  string           `json:"summary" description:"The plan, or why complete or blocked, in one short paragraph. Non-empty, trimmed."`
	Tasks    []planTaskParams `json:"tasks" description:"The wave's tasks for status tasks (at least one); [] otherwise."`
	Evidence []string         `json:"evidence" description:"Checkable facts found (commands run and their results, files); at least one for complete; [] when none."`
	Blocker  string           `json:"blocker" description:"What blocks the objective and who must act; non-empty exactly when status is blocked, otherwise \"\"."`
}

type planTaskParams struct {
	ID        string   `json:"id" description:"New task id: lower-case letters, digits and '-', at most 63 characters, unique across the campaign."`
	Objective string   `json:"objective" description:"Everything the task's agent must do and how to check it, self-contained."`
	DependsOn []string `json:"dependsOn" description:"Ids of tasks of this plan (or merged ones) that must merge first; [] when none."`
}

// RunPlan runs one planner session: RunSession with req.Plan set.
// Result.Plan carries the validated plan.
func RunPlan(ctx context.Context, cfg Config, req Request, obs Observer) (Result, error) {
	if req.Plan == nil {
		return Result{}, errors.New("plan request: no wave to plan")
	}
	return RunSession(ctx, cfg, req, obs)
}

// planner is the role of a campaign wave's planner: the reviewer's
// read-only tools and checkout, its own prompts, and submit_plan.
type planner struct{ subject *PlanSubject }

func (planner) finishing() string { return SubmitPlanTool }

func (planner) texts() roleTexts {
	return roleTexts{system: textPlanSystem, reminder: textPlanReminder, finalReminder: textPlanFinalReminder, handoff: textPlanHandoff}
}

// workspace is read-only to the planner's commands, as the reviewer's.
func (planner) workspace(cfg Config, req Request) (*tools.Workspace, *tools.ProtectedSnapshot, error) {
	return readOnlyWorkspace(cfg, req)
}

// restoredNote is empty: a planner hands over no work.
func (planner) restoredNote([]string) string { return "" }

// submit checks a plan: decoded strictly and validated against the wave's
// rules; an invalid one goes back with the rule it broke (one repair
// spent), a valid one ends the session.
func (p planner) submit(_ context.Context, rd *round, _ int, args string) (tools.Result, *report.Report, error) {
	pl, err := plan.Decode([]byte(args))
	if err == nil {
		err = plan.Validate(pl, p.subject.Rules)
	}
	if err != nil {
		res, ferr := rd.rejected("plan", err)
		return res, nil, ferr
	}
	rd.plan = &pl
	return tools.Result{Output: fmt.Sprintf("Plan accepted (%s). Planning is over.", planLine(pl))}, &report.Report{}, nil
}

// planLine says what a plan holds in a few words.
func planLine(p plan.Plan) string {
	if p.Status != plan.StatusTasks {
		return p.Status
	}
	ids := make([]string, len(p.Tasks))
	for i, t := range p.Tasks {
		ids[i] = t.ID
	}
	return fmt.Sprintf("%d task(s): %s", len(p.Tasks), strings.Join(ids, ", "))
}

type planData struct {
	roundData
	Wave                int
	Head                string
	Report, Rejected    string
	MaxTasks            int
	MaxObjectiveChars   int
	KnownIDs, MergedIDs string
}

func (p planner) prompt(rd *round) (string, error) {
	s := p.subject
	d := planData{roundData: rd.boundsData(), Wave: s.Wave, Head: s.Head, Rejected: s.Rejected,
		MaxTasks: orDefault(s.Rules.MaxTasks, plan.DefaultMaxTasks), MaxObjectiveChars: orDefault(s.Rules.MaxObjectiveChars, plan.DefaultMaxObjectiveChars),
		KnownIDs: listIDs(s.Rules.KnownIDs), MergedIDs: listIDs(s.Rules.MergedIDs)}
	if s.Report != nil {
		d.Report = s.Report.Render()
	}
	return render(textPlan, d)
}

// maxListedIDs bounds the ids a planner's prompt lists (a campaign may hold
// thousands); submit_plan checks against all of them.
const maxListedIDs = 200

func listIDs(ids []string) string {
	if len(ids) <= maxListedIDs {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more (submit_plan names any id you reuse)", strings.Join(ids[:maxListedIDs], ", "), len(ids)-maxListedIDs)
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
