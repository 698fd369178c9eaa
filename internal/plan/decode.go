package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ralph-temporal/ralph/internal/tasklist"
)

// The keys of submit_plan's arguments and of each of its tasks: a planner
// names what a task is for and what it waits for; how it is verified and
// bounded is the campaign's.
var (
	planKeys = []string{"status", "summary", "tasks", "evidence", "blocker"}
	taskKeys = []string{"id", "objective", "dependsOn"}
)

// submittedPlan and submittedTask are the arguments as sent.
type submittedPlan struct {
	Status   string          `json:"status"`
	Summary  string          `json:"summary"`
	Tasks    []submittedTask `json:"tasks"`
	Evidence []string        `json:"evidence"`
	Blocker  string          `json:"blocker"`
}

type submittedTask struct {
	ID        string   `json:"id"`
	Objective string   `json:"objective"`
	DependsOn []string `json:"dependsOn"`
}

// Decode reads submit_plan's arguments strictly: a JSON object with exactly
// status, summary, tasks, evidence and blocker (arrays never null), each
// task with id and objective and at most dependsOn besides. The rules of a
// plan are Validate's.
func Decode(data []byte) (Plan, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return Plan{}, errors.New("the plan is not a JSON object")
	}
	if err := exactKeys("the plan", raw, planKeys, planKeys); err != nil {
		return Plan{}, err
	}
	for _, key := range []string{"tasks", "evidence"} {
		if isNull(raw[key]) {
			return Plan{}, fmt.Errorf("the plan's %q is null, want an array ([] when empty)", key)
		}
	}
	for _, key := range []string{"status", "summary", "blocker"} {
		if isNull(raw[key]) {
			return Plan{}, fmt.Errorf("the plan's %q is null, want a string", key)
		}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw["tasks"], &items); err != nil {
		return Plan{}, errors.New("the plan's \"tasks\" must be an array of tasks")
	}
	for i, item := range items {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
			return Plan{}, fmt.Errorf("tasks[%d] must be an object with id and objective", i)
		}
		if err := exactKeys(fmt.Sprintf("tasks[%d]", i), fields, taskKeys[:2], taskKeys); err != nil {
			return Plan{}, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s submittedPlan
	if err := dec.Decode(&s); err != nil {
		return Plan{}, fmt.Errorf("the plan has a field of the wrong type: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Plan{}, errors.New("the plan has trailing data after the JSON object")
	}
	p := Plan{Status: s.Status, Summary: s.Summary, Evidence: s.Evidence, Blocker: s.Blocker}
	for _, t := range s.Tasks {
		p.Tasks = append(p.Tasks, tasklist.Task{ID: t.ID, Objective: t.Objective, DependsOn: t.DependsOn})
	}
	if len(p.Evidence) == 0 {
		p.Evidence = nil
	}
	return p, nil
}

// exactKeys checks that fields has every required key and no key outside
// allowed.
func exactKeys(what string, fields map[string]json.RawMessage, required, allowed []string) error {
	for _, key := range required {
		if _, ok := fields[key]; !ok {
			return fmt.Errorf("%s is missing the required key %q", what, key)
		}
	}
	for key := range fields {
		if !slices.Contains(allowed, key) {
			return fmt.Errorf("%s has the unknown key %q (allowed: %s)", what, key, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
