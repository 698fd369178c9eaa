package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/activities"
)

// inputKeys are the only keys a caller may send.
var inputKeys = [...]string{"objective", "maxRounds", "workspace"}

// run is a validated input with every default resolved.
type run struct {
	objective string
	maxRounds int
	workspace string
}

// InputError names the input field that is wrong and why.
type InputError struct {
	Field   string
	Problem string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid input: %s: %s", e.Field, e.Problem)
}

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// parseInput decodes and validates the caller's raw JSON input against the
// resolved deployment limits. workflowID supplies the default workspace.
func parseInput(raw []byte, limits activities.Limits, workflowID string) (run, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return run{}, inputErr("input", `is missing; send a JSON object like {"objective": "..."}`)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return run{}, inputErr("input", "must be a JSON object with objective, maxRounds and workspace: %v", err)
	}
	// Sorted, so two unknown fields always get the same message on replay.
	//workflowcheck:ignore
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		if !isInputKey(key) {
			return run{}, inputErr(key, "is not a known field (allowed: objective, maxRounds, workspace)")
		}
	}

	objective, err := parseObjective(fields["objective"], limits.MaxObjectiveChars)
	if err != nil {
		return run{}, err
	}
	maxRounds, err := parseMaxRounds(fields["maxRounds"], limits.MaxRounds)
	if err != nil {
		return run{}, err
	}
	workspace, err := parseWorkspace(fields["workspace"], workflowID)
	if err != nil {
		return run{}, err
	}
	return run{objective: objective, maxRounds: maxRounds, workspace: workspace}, nil
}

func isInputKey(key string) bool {
	for _, k := range inputKeys {
		if k == key {
			return true
		}
	}
	return false
}

func parseObjective(raw json.RawMessage, maxChars int) (string, error) {
	if raw == nil || string(bytes.TrimSpace(raw)) == "null" {
		return "", inputErr("objective", "is required")
	}
	var objective string
	if err := json.Unmarshal(raw, &objective); err != nil {
		return "", inputErr("objective", "must be a JSON string")
	}
	objective = strings.TrimSpace(objective)
	if objective == "" {
		return "", inputErr("objective", "must not be empty")
	}
	if n := utf8.RuneCountInString(objective); n > maxChars {
		return "", inputErr("objective", "is %d characters, over the limit of %d", n, maxChars)
	}
	return objective, nil
}

func parseMaxRounds(raw json.RawMessage, ceiling int) (int, error) {
	text := string(bytes.TrimSpace(raw))
	if raw == nil || text == "null" {
		return ceiling, nil
	}
	if strings.ContainsAny(text, ".eE") || strings.HasPrefix(text, `"`) {
		return 0, inputErr("maxRounds", "must be a JSON integer, got %s", text)
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, inputErr("maxRounds", "must be a JSON integer between 1 and %d, got %s", ceiling, text)
	}
	if n < 1 || n > ceiling {
		return 0, inputErr("maxRounds", "must be between 1 and %d (the deployment's ceiling), got %d", ceiling, n)
	}
	return n, nil
}

func parseWorkspace(raw json.RawMessage, workflowID string) (string, error) {
	if raw == nil || string(bytes.TrimSpace(raw)) == "null" {
		return DefaultWorkspace(workflowID), nil
	}
	var workspace string
	if err := json.Unmarshal(raw, &workspace); err != nil {
		return "", inputErr("workspace", "must be a JSON string")
	}
	if err := CheckWorkspace(workspace); err != nil {
		return "", err
	}
	return workspace, nil
}

// CheckWorkspace applies activities.CheckWorkspace, the one workspace rule,
// as an input error naming the field.
func CheckWorkspace(workspace string) error {
	if err := activities.CheckWorkspace(workspace); err != nil {
		return &InputError{Field: "workspace", Problem: err.Error()}
	}
	return nil
}

// DefaultWorkspace turns a workflow id into a safe single path segment.
func DefaultWorkspace(workflowID string) string {
	var b strings.Builder
	for _, r := range workflowID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".")
	if name == "" {
		return "run"
	}
	return name
}
