// Package report is the handoff report that crosses from one Ralph round to
// the next: its shape, strict decoding, validation and size rule. It is pure:
// no Temporal, no I/O, so the agent and the workflow apply the very same rules.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Status values a worker may report.
const (
	StatusContinue = "continue"
	StatusComplete = "complete"
	StatusBlocked  = "blocked"
)

// Report is the only state that crosses from one round to the next.
type Report struct {
	Status    string   `json:"status"`
	Summary   string   `json:"summary"`
	Evidence  []string `json:"evidence"`
	NextSteps []string `json:"nextSteps"`
	Blocker   string   `json:"blocker"`
}

// requiredKeys lists every key a report must carry, in the order they are reported missing.
var requiredKeys = [...]string{"status", "summary", "evidence", "nextSteps", "blocker"}

// Decode parses a report strictly: a JSON object with exactly the five keys,
// no others, no trailing data. It does not apply the semantic rules; call
// Validate for those.
func Decode(data []byte) (Report, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Report{}, fmt.Errorf("report is not a JSON object: %w", err)
	}
	if raw == nil {
		return Report{}, errors.New("report is null, want a JSON object")
	}
	for _, key := range requiredKeys {
		if _, ok := raw[key]; !ok {
			return Report{}, fmt.Errorf("report is missing the required key %q", key)
		}
	}
	if len(raw) != len(requiredKeys) {
		for key := range raw {
			if !isRequiredKey(key) {
				return Report{}, fmt.Errorf("report has the unknown key %q (allowed: status, summary, evidence, nextSteps, blocker)", key)
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("report has a field of the wrong type: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Report{}, errors.New("report has trailing data after the JSON object")
	}
	for _, key := range [...]string{"evidence", "nextSteps"} {
		if string(bytes.TrimSpace(raw[key])) == "null" {
			return Report{}, fmt.Errorf("report field %q is null, want an array ([] when empty)", key)
		}
	}
	for _, key := range [...]string{"status", "summary", "blocker"} {
		if string(bytes.TrimSpace(raw[key])) == "null" {
			return Report{}, fmt.Errorf("report field %q is null, want a string", key)
		}
	}
	return r, nil
}

func isRequiredKey(key string) bool {
	for _, k := range requiredKeys {
		if k == key {
			return true
		}
	}
	return false
}

// ValidationError names the field and the rule a report broke.
type ValidationError struct {
	Field string
	Rule  string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid report: %s: %s", e.Field, e.Rule)
}

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// Validate applies every semantic rule of the handoff contract and the size
// cap (compact JSON, in code points). It returns the first broken rule.
// Reports are never repaired or cut here.
func Validate(r Report, maxChars int) error {
	switch r.Status {
	case StatusContinue, StatusComplete, StatusBlocked:
	default:
		return invalid("status", "must be one of continue, complete, blocked; got %q", r.Status)
	}
	if err := checkFields(r); err != nil {
		return err
	}
	if err := checkStatus(r); err != nil {
		return err
	}
	size, err := Size(r)
	if err != nil {
		return err
	}
	if maxChars <= 0 {
		return fmt.Errorf("report size cap must be positive, got %d", maxChars)
	}
	if size > maxChars {
		return invalid("report", "compact JSON is %d characters, over the cap of %d; shorten it (it is never cut)", size, maxChars)
	}
	return nil
}

// checkFields applies the rules every status shares: arrays, never null,
// and trimmed, non-empty texts.
func checkFields(r Report) error {
	if err := checkText("summary", r.Summary, false); err != nil {
		return err
	}
	if r.Evidence == nil {
		return invalid("evidence", "must be an array ([] when empty), not null")
	}
	if r.NextSteps == nil {
		return invalid("nextSteps", "must be an array ([] when empty), not null")
	}
	for i, item := range r.Evidence {
		if err := checkText(fmt.Sprintf("evidence[%d]", i), item, false); err != nil {
			return err
		}
	}
	for i, item := range r.NextSteps {
		if err := checkText(fmt.Sprintf("nextSteps[%d]", i), item, false); err != nil {
			return err
		}
	}
	return checkText("blocker", r.Blocker, true)
}

// checkStatus applies what r.Status asks of the other fields.
func checkStatus(r Report) error {
	switch r.Status {
	case StatusContinue:
		if len(r.NextSteps) == 0 {
			return invalid("nextSteps", "status continue needs at least one next step")
		}
		if r.Blocker != "" {
			return invalid("blocker", "status continue needs an empty blocker")
		}
	case StatusComplete:
		if len(r.Evidence) == 0 {
			return invalid("evidence", "status complete needs at least one evidence item")
		}
		if len(r.NextSteps) != 0 {
			return invalid("nextSteps", "status complete needs no next steps (got %d)", len(r.NextSteps))
		}
		if r.Blocker != "" {
			return invalid("blocker", "status complete needs an empty blocker")
		}
	case StatusBlocked:
		if r.Blocker == "" {
			return invalid("blocker", "status blocked needs a non-empty blocker that names what blocks the work")
		}
	}
	return nil
}

func checkText(field, value string, mayBeEmpty bool) error {
	if !utf8.ValidString(value) {
		return invalid(field, "must be valid UTF-8")
	}
	if value != strings.TrimSpace(value) {
		return invalid(field, "must be trimmed (no leading or trailing whitespace)")
	}
	if value == "" && !mayBeEmpty {
		return invalid(field, "must be a non-empty string")
	}
	return nil
}

// Compact returns the report as compact JSON without HTML escaping: the form
// whose length the size cap counts.
func Compact(r Report) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Size is the number of Unicode code points of the report's compact JSON.
func Size(r Report) (int, error) {
	data, err := Compact(r)
	if err != nil {
		return 0, err
	}
	return utf8.RuneCount(data), nil
}

// Indented returns the report as two-space indented JSON without HTML escaping,
// the form shown to people.
func Indented(r Report) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return "", fmt.Errorf("encode report: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
