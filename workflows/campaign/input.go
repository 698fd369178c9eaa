package campaign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/plan"
	"github.com/ralph-temporal/ralph/workflows"
)

// taskIDPattern is a task id: a path segment and a ref component as is.
var taskIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// branchPattern keeps a branch name to what git and a path both accept.
var branchPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)

// Ceilings of the campaign's own counts.
const (
	maxMergeAttemptsCeiling = 100
	maxMergeBatchCeiling    = 64
)

func campaignKeys() []string {
	return []string{fieldObjective, fieldMaxWaves, fieldTasks, fieldTasksFile, fieldBase, fieldBranch, fieldMaxParallel, fieldVerifyCommand, fieldMaxMergeAttempts,
		fieldMergeBatch, fieldMergeLanes, fieldApprove, fieldMaxTokens, fieldMaxMinutes, fieldProtected}
}

func taskKeys() []string {
	return []string{fieldID, fieldObjective, fieldDependsOn, fieldVerifyCommand, fieldMaxRounds, fieldProtected}
}

// campaignStart is a validated campaign input.
type campaignStart struct {
	settings   campaignSettings
	tasks      []Task
	maxTokens  int
	maxMinutes int
}

// parseCampaignInput validates a caller's campaign input against the
// deployment's limits; fields are checked in a fixed order.
func parseCampaignInput(raw []byte, limits activities.Limits, id string) (campaignStart, error) {
	if limits.Git == "" {
		return campaignStart{}, inputErr("RALPH_GIT", "a campaign needs git checkpoints: set RALPH_GIT=remote (any number of workers) or local (one worker, or workers sharing the workspace root) on the worker")
	}
	if err := activities.CheckWorkspace(activities.TaskWorkspace(id, "x")); err != nil || strings.Contains(id, "/") || id != workflows.DefaultWorkspace(id) {
		return campaignStart{}, inputErr("workflow id", "%q must be one path segment of letters, digits, '.', '_' and '-' (it names the campaign's branches and workspaces)", id)
	}
	fields, err := objectFields(raw, campaignKeys(), `{"tasks": [{"id": "...", "objective": "..."}]}`)
	if err != nil {
		return campaignStart{}, err
	}
	var s campaignStart
	st := &s.settings
	if err := parseWork(fields, limits, &s); err != nil {
		return campaignStart{}, err
	}
	st.ID = id
	if st.Base, err = parseBranch(fieldBase, fields[fieldBase], ""); err != nil {
		return campaignStart{}, err
	}
	if st.Branch, err = parseBranch(fieldBranch, fields[fieldBranch], "ralph/"+campaignWorkspacePrefix+id+campaignIntegrationSuffix); err != nil {
		return campaignStart{}, err
	}
	ceiling := max(limits.MaxCampaignParallel, 1)
	if st.MaxParallel, err = parseCount(fieldMaxParallel, fields[fieldMaxParallel], ceiling, min(DefaultCampaignParallel, ceiling), "RALPH_MAX_CAMPAIGN_PARALLEL"); err != nil {
		return campaignStart{}, err
	}
	if st.VerifyCommand, err = parseVerifyCommand(fields[fieldVerifyCommand], limits.VerifyCommand); err != nil {
		return campaignStart{}, err
	}
	if st.VerifyCommand == "" {
		return campaignStart{}, inputErr(fieldVerifyCommand, "is required: the merged tree's gate (the worker sets no RALPH_VERIFY_COMMAND)")
	}
	if err := parseQueue(fields, limits, st); err != nil {
		return campaignStart{}, err
	}
	if st.MaxWaves, err = parseMaxWaves(fields[fieldMaxWaves], *st, limits); err != nil {
		return campaignStart{}, err
	}
	if s.maxTokens, err = parseBudget(fieldMaxTokens, fields[fieldMaxTokens], limits.MaxRunTokens, "RALPH_MAX_RUN_TOKENS"); err != nil {
		return campaignStart{}, err
	}
	if s.maxMinutes, err = parseBudget(fieldMaxMinutes, fields[fieldMaxMinutes], limits.MaxRunMinutes, "RALPH_MAX_RUN_MINUTES"); err != nil {
		return campaignStart{}, err
	}
	if st.ProtectedPaths, err = parseProtected(fields[fieldProtected]); err != nil {
		return campaignStart{}, err
	}
	if err := checkCarried(nil, s.tasks, fieldTasks); err != nil {
		return campaignStart{}, err
	}
	return s, nil
}

// parseWork reads what the campaign works on: an objective its planners
// split (waves.go), a tasksFile, or an inline task list.
func parseWork(fields map[string]json.RawMessage, limits activities.Limits, s *campaignStart) error {
	st := &s.settings
	var err error
	if st.Objective, err = parseWaveObjective(fields, limits); err != nil || st.Objective != "" {
		return err
	}
	if st.TasksFile, err = parseTasksFile(fields[fieldTasks], fields[fieldTasksFile]); err != nil || st.TasksFile != "" {
		return err
	}
	s.tasks, err = parseInlineTasks(fields[fieldTasks], limits, nil)
	return err
}

// parseQueue reads the merge queue's settings: attempts, batch, approvals
// and lanes.
func parseQueue(fields map[string]json.RawMessage, limits activities.Limits, st *campaignSettings) error {
	var err error
	if st.MaxMergeAttempts, err = parseCount(fieldMaxMergeAttempts, fields[fieldMaxMergeAttempts], maxMergeAttemptsCeiling, DefaultMaxMergeAttempts, "the largest accepted"); err != nil {
		return err
	}
	if st.MergeBatch, err = parseCount(fieldMergeBatch, fields[fieldMergeBatch], maxMergeBatchCeiling, DefaultMergeBatch, "the largest accepted"); err != nil {
		return err
	}
	if st.Approve, err = parseApprove(fields[fieldApprove]); err != nil {
		return err
	}
	if st.MergeLanes, err = parseCount(fieldMergeLanes, fields[fieldMergeLanes], max(limits.MaxMergeLanes, 1), DefaultMergeLanes, "RALPH_MAX_MERGE_LANES"); err != nil {
		return err
	}
	if st.MergeLanes == 1 {
		st.MergeLanes = 0 // one lane, kept out of the settings: they encode as before lanes
	}
	if st.MergeLanes > 1 && (st.Approve == ApproveMerge || st.Approve == ApprovePlanMerge) {
		return inputErr(fieldMergeLanes, "must be 1 with approve %q: each merge waits for a person, and lanes stacked on it would wait with it", st.Approve)
	}
	return nil
}

// objectFields decodes a JSON object and refuses keys allowed does not list.
func objectFields(raw []byte, allowed []string, example string) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, inputErr("input", "is missing; send a JSON object like %s", example)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, inputErr("input", "must be a JSON object with the fields %s: %v", strings.Join(allowed, ", "), err)
	}
	if key := firstUnknown(fields, allowed); key != "" {
		return nil, inputErr(key, "is not a known field (allowed: %s)", strings.Join(allowed, ", "))
	}
	return fields, nil
}

// parseTasks validates a task list: known keys, ids unique (also against
// existing, the tasks a campaign already holds), dependencies on known ids
// and no cycle, at most ceiling tasks in all.
func parseTasks(raw json.RawMessage, limits activities.Limits, existing []Task, ceiling int) ([]Task, error) {
	var items []json.RawMessage
	if isNull(raw) {
		return nil, inputErr(fieldTasks, "is required: a JSON array of tasks")
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, inputErr(fieldTasks, "must be a JSON array of tasks")
	}
	if len(items) == 0 {
		return nil, inputErr(fieldTasks, "must hold at least one task")
	}
	if ceiling > 0 && len(existing)+len(items) > ceiling {
		return nil, inputErr(fieldTasks, "would make %d tasks, more than %d (RALPH_MAX_CAMPAIGN_TASKS)", len(existing)+len(items), ceiling)
	}
	known := map[string]bool{}
	for _, t := range existing {
		known[t.ID] = true
	}
	tasks := make([]Task, 0, len(items))
	for i, item := range items {
		t, err := parseTask(fmt.Sprintf("%s[%d]", fieldTasks, i), item, limits)
		if err != nil {
			return nil, err
		}
		if known[t.ID] {
			return nil, inputErr(fmt.Sprintf("%s[%d].id", fieldTasks, i), "%q is used by another task", t.ID)
		}
		known[t.ID] = true
		tasks = append(tasks, t)
	}
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			if !known[d] {
				return nil, inputErr(fmt.Sprintf("%s[%d].dependsOn", fieldTasks, i), "names %q, which is no task of the campaign", d)
			}
		}
	}
	if cycle := plan.FindCycle(append(append([]Task{}, existing...), tasks...)); cycle != nil {
		return nil, inputErr(fieldDependsOn, "has a cycle: %s", strings.Join(cycle, " -> "))
	}
	return tasks, nil
}

func parseTask(field string, raw json.RawMessage, limits activities.Limits) (Task, error) {
	fields, err := objectFields(raw, taskKeys(), `{"id": "...", "objective": "..."}`)
	if err != nil {
		if ie, ok := err.(*workflows.InputError); ok {
			ie.Field = field + "." + ie.Field
		}
		return Task{}, err
	}
	var t Task
	if isNull(fields[fieldID]) || json.Unmarshal(fields[fieldID], &t.ID) != nil || !taskIDPattern.MatchString(t.ID) {
		return Task{}, inputErr(field+".id", "must be a string of 1 to 63 lowercase letters, digits and '-', starting with a letter or digit, got %s", bytes.TrimSpace(fields[fieldID]))
	}
	field = fmt.Sprintf("%s (%s)", field, t.ID)
	if t.Objective, err = parseObjective(fields[fieldObjective], limits.MaxObjectiveChars); err != nil {
		return Task{}, prefixed(field, err)
	}
	if !isNull(fields[fieldDependsOn]) {
		if err := json.Unmarshal(fields[fieldDependsOn], &t.DependsOn); err != nil {
			return Task{}, inputErr(field+".dependsOn", "must be a JSON array of task ids")
		}
	}
	for _, d := range t.DependsOn {
		if d == t.ID {
			return Task{}, inputErr(field+".dependsOn", "names the task itself")
		}
	}
	if !isNull(fields[fieldVerifyCommand]) {
		if t.VerifyCommand, err = parseVerifyCommand(fields[fieldVerifyCommand], ""); err != nil {
			return Task{}, prefixed(field, err)
		}
	}
	if !isNull(fields[fieldMaxRounds]) {
		n, err := parseCount(fieldMaxRounds, fields[fieldMaxRounds], limits.MaxRounds, limits.MaxRounds, "the deployment's ceiling")
		if err != nil {
			return Task{}, prefixed(field, err)
		}
		t.MaxRounds = &n
	}
	if t.ProtectedPaths, err = parseProtected(fields[fieldProtected]); err != nil {
		return Task{}, prefixed(field, err)
	}
	// The loop and the merge get one list, the campaign's then the task's,
	// where the last match wins: a task's "!" would re-allow a path the
	// campaign protects.
	for i, p := range t.ProtectedPaths {
		if strings.HasPrefix(p, "!") {
			return Task{}, &workflows.InputError{Field: fmt.Sprintf("%s.%s[%d]", field, fieldProtected, i),
				Problem: fmt.Sprintf("%q: a task's protected paths add to the campaign's; a \"!\" pattern would re-allow what the campaign protects", p)}
		}
	}
	return t, nil
}

func prefixed(field string, err error) error {
	if ie, ok := err.(*workflows.InputError); ok {
		return &workflows.InputError{Field: field + "." + ie.Field, Problem: ie.Problem}
	}
	return err
}

func parseBranch(field string, raw json.RawMessage, def string) (string, error) {
	if isNull(raw) {
		return def, nil
	}
	var b string
	if err := json.Unmarshal(raw, &b); err != nil {
		return "", inputErr(field, "must be a JSON string")
	}
	if !branchPattern.MatchString(b) || strings.Contains(b, "..") || strings.Contains(b, "//") ||
		strings.HasSuffix(b, "/") || strings.HasSuffix(b, ".lock") || strings.HasSuffix(b, ".") {
		return "", inputErr(field, "%q is not a branch name git accepts (letters, digits, '.', '_', '-', '/')", b)
	}
	return b, nil
}

func parseApprove(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return ApproveNone, nil
	}
	var a string
	if err := json.Unmarshal(raw, &a); err != nil || (a != ApproveNone && a != ApproveMerge && a != ApprovePlan && a != ApprovePlanMerge) {
		return "", inputErr(fieldApprove, `must be "none", "merge", "plan" or "plan,merge", got %s`, bytes.TrimSpace(raw))
	}
	return a, nil
}
