package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/names"
)

// Input field names: the only keys a caller may send.
const (
	fieldObjective     = "objective"
	fieldMaxRounds     = "maxRounds"
	fieldWorkspace     = "workspace"
	fieldVerifyCommand = "verifyCommand"
	fieldMaxTokens     = "maxTokens"
	fieldMaxMinutes    = "maxMinutes"
	fieldProtected     = "protectedPaths"
	fieldReview        = "review"
	fieldCandidates    = "candidates"
)

// MaxVerifyCommandChars bounds a run's verify command in code points.
const MaxVerifyCommandChars = 4096

// inputKeys lists the allowed keys in the order errors name them.
func inputKeys() []string {
	return []string{fieldObjective, fieldMaxRounds, fieldWorkspace, fieldVerifyCommand, fieldMaxTokens, fieldMaxMinutes, fieldProtected, fieldReview, fieldApprove, fieldCandidates}
}

// run is a validated input with every default resolved.
type run struct {
	objective     string
	maxRounds     int
	workspace     string
	verifyCommand string // "" when none applies
	maxTokens     int    // 0: no token budget
	maxMinutes    int    // 0: no time budget
	protected     []string
	review        bool
	approve       string
	candidates    int
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
// Fields are checked in a fixed order, so the same bad input always gets the
// same message.
func parseInput(raw []byte, limits activities.Limits, workflowID string) (run, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return run{}, inputErr("input", `is missing; send a JSON object like {"objective": "..."}`)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return run{}, inputErr("input", "must be a JSON object with the fields %s: %v", strings.Join(inputKeys(), ", "), err)
	}
	if key := firstUnknown(fields, inputKeys()); key != "" {
		return run{}, inputErr(key, "is not a known field (allowed: %s)", strings.Join(inputKeys(), ", "))
	}

	var r run
	var err error
	if r.objective, err = parseObjective(fields[fieldObjective], limits.MaxObjectiveChars); err != nil {
		return run{}, err
	}
	if r.maxRounds, err = parseCount(fieldMaxRounds, fields[fieldMaxRounds], limits.MaxRounds, limits.MaxRounds, "the deployment's ceiling"); err != nil {
		return run{}, err
	}
	if r.workspace, err = parseWorkspace(fields[fieldWorkspace], workflowID); err != nil {
		return run{}, err
	}
	if r.verifyCommand, err = parseVerifyCommand(fields[fieldVerifyCommand], limits.VerifyCommand); err != nil {
		return run{}, err
	}
	if r.maxTokens, err = parseBudget(fieldMaxTokens, fields[fieldMaxTokens], limits.MaxRunTokens, "RALPH_MAX_RUN_TOKENS"); err != nil {
		return run{}, err
	}
	if r.maxMinutes, err = parseBudget(fieldMaxMinutes, fields[fieldMaxMinutes], limits.MaxRunMinutes, "RALPH_MAX_RUN_MINUTES"); err != nil {
		return run{}, err
	}
	if r.protected, err = parseProtected(fields[fieldProtected]); err != nil {
		return run{}, err
	}
	if r.review, err = parseReview(fields[fieldReview], limits.Review); err != nil {
		return run{}, err
	}
	if r.approve, err = parseRunApprove(fields[fieldApprove], limits.Approve); err != nil {
		return run{}, err
	}
	if r.candidates, err = parseCandidates(fields[fieldCandidates], limits); err != nil {
		return run{}, err
	}
	return r, nil
}

// firstUnknown is the first key of fields, in sorted order, that allowed
// does not list ("" when none), so a message never depends on map order.
func firstUnknown(fields map[string]json.RawMessage, allowed []string) string {
	var unknown []string
	//workflowcheck:ignore
	for key := range fields {
		if !slices.Contains(allowed, key) {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	return unknown[0]
}

func isNull(raw json.RawMessage) bool {
	return raw == nil || string(bytes.TrimSpace(raw)) == "null"
}

func parseObjective(raw json.RawMessage, maxChars int) (string, error) {
	if isNull(raw) {
		return "", inputErr(fieldObjective, "is required")
	}
	return parseText(fieldObjective, raw, maxChars, "must not be empty")
}

// parseText reads a JSON string, trims it and bounds it in code points.
func parseText(field string, raw json.RawMessage, maxChars int, emptyProblem string) (string, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return "", inputErr(field, "must be a JSON string")
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "", inputErr(field, "%s", emptyProblem)
	}
	if n := utf8.RuneCountInString(text); n > maxChars {
		return "", inputErr(field, "is %d characters, over the limit of %d", n, maxChars)
	}
	return text, nil
}

// parseCount reads a JSON integer between 1 and ceiling; null or absent
// means def. A float ("2.0"), a string or an out-of-range value is refused.
func parseCount(field string, raw json.RawMessage, ceiling, def int, ceilingName string) (int, error) {
	if isNull(raw) {
		return def, nil
	}
	text := string(bytes.TrimSpace(raw))
	if strings.ContainsAny(text, ".eE") || strings.HasPrefix(text, `"`) {
		return 0, inputErr(field, "must be a JSON integer, got %s", text)
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, inputErr(field, "must be a JSON integer between 1 and %d, got %s", ceiling, text)
	}
	if n < 1 || n > ceiling {
		return 0, inputErr(field, "must be between 1 and %d (%s), got %d", ceiling, ceilingName, n)
	}
	return n, nil
}

// parseBudget reads an optional positive budget bounded by the deployment's
// ceiling (which is also the default); ceiling 0 means no ceiling and no
// default.
func parseBudget(field string, raw json.RawMessage, ceiling int, ceilingSetting string) (int, error) {
	if ceiling > 0 {
		return parseCount(field, raw, ceiling, ceiling, "the deployment's ceiling "+ceilingSetting)
	}
	return parseCount(field, raw, maxJSONInt, 0, "the largest budget accepted")
}

// maxJSONInt is the largest integer a JSON number holds exactly.
const maxJSONInt = 1<<53 - 1

func parseVerifyCommand(raw json.RawMessage, deploymentDefault string) (string, error) {
	if isNull(raw) {
		return deploymentDefault, nil
	}
	return parseText(fieldVerifyCommand, raw, MaxVerifyCommandChars, "must not be empty (leave it out to use the deployment's default)")
}

func parseWorkspace(raw json.RawMessage, workflowID string) (string, error) {
	if isNull(raw) {
		return DefaultWorkspace(workflowID), nil
	}
	var workspace string
	if err := json.Unmarshal(raw, &workspace); err != nil {
		return "", inputErr(fieldWorkspace, "must be a JSON string")
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
		return &InputError{Field: fieldWorkspace, Problem: err.Error()}
	}
	return nil
}

// DefaultWorkspace turns a workflow id into a safe single path segment; a
// long id is shortened with a hash suffix rather than refused.
func DefaultWorkspace(workflowID string) string {
	name := strings.TrimLeft(names.Sanitize(workflowID, '-'), ".")
	if name == "" {
		return "run"
	}
	return names.Shorten(name, names.MaxNameBytes)
}

// parseProtected reads the run's protected-path patterns: a JSON array of
// at most tools.MaxProtectedPatterns trimmed, non-empty gitignore-style
// patterns of at most tools.MaxProtectedPatternChars code points.
func parseProtected(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var patterns []json.RawMessage
	if err := json.Unmarshal(raw, &patterns); err != nil {
		return nil, inputErr(fieldProtected, "must be a JSON array of strings")
	}
	if len(patterns) > tools.MaxProtectedPatterns {
		return nil, inputErr(fieldProtected, "has %d patterns, more than %d", len(patterns), tools.MaxProtectedPatterns)
	}
	out := make([]string, 0, len(patterns))
	for i, p := range patterns {
		var s string
		if err := json.Unmarshal(p, &s); err != nil || isNull(p) {
			return nil, inputErr(fmt.Sprintf("%s[%d]", fieldProtected, i), "must be a JSON string")
		}
		if err := tools.CheckProtectedPattern(s); err != nil {
			return nil, inputErr(fmt.Sprintf("%s[%d]", fieldProtected, i), "%q %v", s, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// parseReview reads the run's review switch; null or absent means the
// deployment's RALPH_REVIEW.
func parseReview(raw json.RawMessage, deploymentDefault bool) (bool, error) {
	if isNull(raw) {
		return deploymentDefault, nil
	}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, inputErr(fieldReview, "must be a JSON boolean (true or false), got %s", bytes.TrimSpace(raw))
}

// parseRunApprove reads the run's approval mode; null or absent means the
// deployment's RALPH_APPROVE.
func parseRunApprove(raw json.RawMessage, deploymentDefault string) (string, error) {
	if isNull(raw) {
		return deploymentDefault, nil
	}
	var mode string
	if err := json.Unmarshal(raw, &mode); err != nil {
		return "", inputErr(fieldApprove, "must be a JSON string (none, complete or rounds:N), got %s", bytes.TrimSpace(raw))
	}
	if _, err := ParseApprove(mode); err != nil || mode == "" {
		return "", inputErr(fieldApprove, "must be none, complete or rounds:N with N a positive integer, got %q", mode)
	}
	return mode, nil
}

// parseCandidates reads how many agents each round runs: at most
// RALPH_MAX_CANDIDATES, RALPH_CANDIDATES when absent. More than one needs
// git checkpoints (each candidate works a clone at the round's base).
func parseCandidates(raw json.RawMessage, limits activities.Limits) (int, error) {
	ceiling := max(limits.MaxCandidates, 1)
	n, err := parseCount(fieldCandidates, raw, ceiling, min(max(limits.Candidates, 1), ceiling), "RALPH_MAX_CANDIDATES")
	if err != nil {
		return 0, err
	}
	if n > 1 && limits.Git == "" {
		return 0, inputErr(fieldCandidates, "%d candidates need git checkpoints (RALPH_GIT=local or remote); this worker has RALPH_GIT=off", n)
	}
	return n, nil
}
