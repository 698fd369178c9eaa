package plan

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/tasklist"
)

// Bounds of a plan's own text (docs/reference.md, submit_plan): the summary
// crosses to the next wave in its report, so it is kept short.
const (
	MaxSummaryChars       = 2000
	MaxEvidenceItems      = 20
	MaxEvidenceChars      = 1000
	MaxBlockerChars       = 2000
	MaxDependencies       = 64
	MaxVerifyCommandChars = 4096 // as a campaign task's (workflows.MaxVerifyCommandChars)
	MaxProtectedPatterns  = 64   // as a campaign task's (tools.MaxProtectedPatterns)
	// DefaultMaxTasks is RALPH_MAX_WAVE_TASKS's default, used when Rules
	// name no ceiling; DefaultMaxObjectiveChars a task objective's bound
	// when they name none (the deployment's RALPH_MAX_OBJECTIVE_CHARS).
	DefaultMaxTasks          = 30
	DefaultMaxObjectiveChars = 32768
)

// Names of the rules a plan can break (RuleError.Rule).
const (
	RuleStatus        = "status"
	RuleSummary       = "summary"
	RuleTaskCount     = "task count"
	RuleTask          = "task"
	RuleUniqueID      = "unique id"
	RuleDependency    = "dependency"
	RuleCycle         = "no cycle"
	RuleEvidence      = "evidence"
	RuleBlocker       = "blocker"
	RuleNoTasks       = "no tasks"
	RuleSize          = "size"
	RuleWaveReport    = "wave report"
	RuleWaveReportCap = "wave report size"
)

// RuleError is a plan (or wave report) that broke one rule: Rule names it,
// the message says where and how, in words the planner can act on.
type RuleError struct {
	Rule    string
	Problem string
}

func (e *RuleError) Error() string { return "rule \"" + e.Rule + "\": " + e.Problem }

func broke(rule, format string, args ...any) error {
	return &RuleError{Rule: rule, Problem: fmt.Sprintf(format, args...)}
}

// maxTasks is the wave's task ceiling.
func (r Rules) maxTasks() int {
	if r.MaxTasks > 0 {
		return r.MaxTasks
	}
	return DefaultMaxTasks
}

func (r Rules) maxObjectiveChars() int {
	if r.MaxObjectiveChars > 0 {
		return r.MaxObjectiveChars
	}
	return DefaultMaxObjectiveChars
}

// Validate checks p against the rules of SPEC 40 and r, returning the first
// rule broken: the status, the summary, then the status's own shape.
func Validate(p Plan, r Rules) error {
	switch p.Status {
	case StatusTasks, StatusComplete, StatusBlocked:
	default:
		return broke(RuleStatus, "status must be one of %q, %q, %q, got %q", StatusTasks, StatusComplete, StatusBlocked, p.Status)
	}
	if err := boundedText(RuleSummary, "summary", p.Summary, MaxSummaryChars, true); err != nil {
		return err
	}
	if err := checkEvidence(p.Evidence); err != nil {
		return err
	}
	switch p.Status {
	case StatusComplete:
		if len(p.Tasks) > 0 {
			return broke(RuleNoTasks, "a complete plan has no tasks (got %d): say complete only when the objective is met, with evidence", len(p.Tasks))
		}
		if len(p.Evidence) == 0 {
			return broke(RuleEvidence, "a complete plan needs at least one evidence item: a checkable fact showing the objective is met on the integration head")
		}
		if p.Blocker != "" {
			return broke(RuleBlocker, "blocker must be \"\" unless status is blocked")
		}
	case StatusBlocked:
		if len(p.Tasks) > 0 {
			return broke(RuleNoTasks, "a blocked plan has no tasks (got %d)", len(p.Tasks))
		}
		return boundedText(RuleBlocker, "blocker", p.Blocker, MaxBlockerChars, true)
	case StatusTasks:
		if p.Blocker != "" {
			return broke(RuleBlocker, "blocker must be \"\" unless status is blocked")
		}
		return checkTasks(p.Tasks, r)
	}
	return nil
}

// boundedText checks a trimmed, non-empty (when required) text within max
// code points.
func boundedText(rule, field, text string, max int, required bool) error {
	if required && strings.TrimSpace(text) == "" {
		return broke(rule, "%s must not be empty", field)
	}
	if text != strings.TrimSpace(text) {
		return broke(rule, "%s must be trimmed (no leading or trailing white space)", field)
	}
	if n := utf8.RuneCountInString(text); n > max {
		return broke(RuleSize, "%s is %d characters, over the limit of %d", field, n, max)
	}
	return nil
}

func checkEvidence(items []string) error {
	if len(items) > MaxEvidenceItems {
		return broke(RuleSize, "evidence has %d items, over the limit of %d", len(items), MaxEvidenceItems)
	}
	for i, e := range items {
		if err := boundedText(RuleEvidence, fmt.Sprintf("evidence[%d]", i), e, MaxEvidenceChars, true); err != nil {
			return err
		}
	}
	return nil
}

// checkTasks applies the wave's task rules: the count, each task's own
// rules (internal/tasklist's), ids new to the campaign, dependencies on
// this wave or merged tasks, and no cycle.
func checkTasks(tasks []tasklist.Task, r Rules) error {
	if len(tasks) == 0 || len(tasks) > r.maxTasks() {
		return broke(RuleTaskCount, "a tasks plan holds 1 to %d tasks (RALPH_MAX_WAVE_TASKS), got %d", r.maxTasks(), len(tasks))
	}
	known := set(r.KnownIDs)
	merged := set(r.MergedIDs)
	inPlan := map[string]int{}
	for i, t := range tasks {
		where := fmt.Sprintf("tasks[%d]", i)
		if err := tasklist.CheckTask(t); err != nil {
			return broke(RuleTask, "%s: %v", where, err)
		}
		if err := checkTaskSizes(where, t, r); err != nil {
			return err
		}
		if j, ok := inPlan[t.ID]; ok {
			return broke(RuleUniqueID, "%s: id %q is already used by tasks[%d] of this plan", where, t.ID, j)
		}
		if known[t.ID] {
			return broke(RuleUniqueID, "%s: id %q is already used by a task of the campaign (ids are unique across the whole campaign): choose a new one", where, t.ID)
		}
		inPlan[t.ID] = i
	}
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			_, ok := inPlan[d]
			switch {
			case d == t.ID:
				return broke(RuleDependency, "tasks[%d] (%s): dependsOn names the task itself", i, t.ID)
			case !ok && !merged[d]:
				return broke(RuleDependency, "tasks[%d] (%s): dependsOn names %q, which is neither a task of this plan nor a merged task of the campaign", i, t.ID, d)
			}
		}
	}
	if cycle := FindCycle(tasks); cycle != nil {
		return broke(RuleCycle, "dependsOn has a cycle: %s (a task cannot wait for itself, even through others)", strings.Join(cycle, " -> "))
	}
	return nil
}

func checkTaskSizes(where string, t tasklist.Task, r Rules) error {
	if n := utf8.RuneCountInString(t.Objective); n > r.maxObjectiveChars() {
		return broke(RuleSize, "%s (%s): objective is %d characters, over the limit of %d", where, t.ID, n, r.maxObjectiveChars())
	}
	if len(t.DependsOn) > MaxDependencies {
		return broke(RuleSize, "%s (%s): dependsOn has %d ids, over the limit of %d", where, t.ID, len(t.DependsOn), MaxDependencies)
	}
	if t.VerifyCommand != "" {
		if err := boundedText(RuleTask, where+".verifyCommand", t.VerifyCommand, MaxVerifyCommandChars, true); err != nil {
			return err
		}
	}
	if t.MaxRounds != nil && *t.MaxRounds < 1 {
		return broke(RuleTask, "%s (%s): maxRounds must be at least 1, got %d", where, t.ID, *t.MaxRounds)
	}
	if len(t.ProtectedPaths) > MaxProtectedPatterns {
		return broke(RuleSize, "%s (%s): protectedPaths has %d patterns, over the limit of %d", where, t.ID, len(t.ProtectedPaths), MaxProtectedPatterns)
	}
	return nil
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// FindCycle returns a dependency cycle among tasks (its ids, the first
// repeated at the end) or nil, visiting tasks in list order so the answer
// is stable. Dependencies outside tasks end a path.
func FindCycle(tasks []tasklist.Task) []string {
	deps := map[string][]string{}
	for _, t := range tasks {
		deps[t.ID] = t.DependsOn
	}
	state := map[string]int{} // 1 visiting, 2 done
	var path []string
	var visit func(id string) []string
	visit = func(id string) []string {
		switch state[id] {
		case 1:
			i := len(path) - 1
			for path[i] != id {
				i--
			}
			return append(append([]string{}, path[i:]...), id)
		case 2:
			return nil
		}
		state[id] = 1
		path = append(path, id)
		for _, d := range deps[id] {
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[id] = 2
		return nil
	}
	for _, t := range tasks {
		if c := visit(t.ID); c != nil {
			return c
		}
	}
	return nil
}
