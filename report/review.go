package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Verdicts of an independent reviewer (docs/guards.md#independent-reviewer).
const (
	VerdictApprove = "approve"
	VerdictRevise  = "revise"
	// VerdictChoose is a choice between a round's candidates (Choice names
	// the candidate); submit_review then takes choice, summary and findings.
	VerdictChoose = "choose"
)

// RevisionPrefix opens the summary of the continue handoff a revise verdict
// turns into.
const RevisionPrefix = "A reviewer asked for revisions: "

// Review is an independent reviewer's verdict on an accepted completion.
// Verdict, Summary and Findings come from the reviewer model; Model and
// SessionID are filled in by the worker that ran the review.
type Review struct {
	Verdict  string   `json:"verdict"`
	Summary  string   `json:"summary"`
	Findings []string `json:"findings"`
	// Choice is the candidate a choosing reviewer named (VerdictChoose).
	Choice    int    `json:"choice,omitempty"`
	Model     string `json:"model"`
	SessionID string `json:"sessionId"`
}

// reviewKeys are the keys submit_review takes, exactly.
var reviewKeys = [...]string{"verdict", "summary", "findings"}

// DecodeReview parses submit_review's arguments strictly: a JSON object with
// exactly verdict, summary and findings. Call ValidateReview for the rules.
func DecodeReview(data []byte) (Review, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Review{}, fmt.Errorf("review is not a JSON object: %w", err)
	}
	if raw == nil {
		return Review{}, errors.New("review is null, want a JSON object")
	}
	for _, key := range reviewKeys {
		if _, ok := raw[key]; !ok {
			return Review{}, fmt.Errorf("review is missing the required key %q", key)
		}
		if string(bytes.TrimSpace(raw[key])) == "null" {
			return Review{}, fmt.Errorf("review field %q is null", key)
		}
	}
	var unknown []string
	for key := range raw {
		if !slices.Contains(reviewKeys[:], key) {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return Review{}, fmt.Errorf("review has the unknown key %q (allowed: verdict, summary, findings)", unknown[0])
	}
	var p struct {
		Verdict  string   `json:"verdict"`
		Summary  string   `json:"summary"`
		Findings []string `json:"findings"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		return Review{}, fmt.Errorf("review has a field of the wrong type: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Review{}, errors.New("review has trailing data after the JSON object")
	}
	return Review{Verdict: p.Verdict, Summary: p.Summary, Findings: p.Findings}, nil
}

// ValidateReview applies the review rules: a known verdict, a non-empty
// trimmed summary, findings an array of non-empty trimmed strings with at
// least one for revise, and the compact JSON of verdict, summary and
// findings within maxChars code points (a review is never cut either).
func ValidateReview(r Review, maxChars int) error {
	switch r.Verdict {
	case VerdictApprove, VerdictRevise:
	default:
		return invalid("verdict", "must be approve or revise; got %q", r.Verdict)
	}
	if err := checkSummaryAndFindings(r); err != nil {
		return err
	}
	if r.Verdict == VerdictRevise && len(r.Findings) == 0 {
		return invalid("findings", "verdict revise needs at least one finding (what must change)")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Verdict  string   `json:"verdict"`
		Summary  string   `json:"summary"`
		Findings []string `json:"findings"`
	}{r.Verdict, r.Summary, r.Findings}); err != nil {
		return err
	}
	if n := utf8.RuneCount(bytes.TrimSuffix(b.Bytes(), []byte("\n"))); n > maxChars {
		return invalid("size", "the review's compact JSON is %d characters, over the limit of %d; shorten the summary or the findings", n, maxChars)
	}
	return nil
}

// RevisionHandoff is the continue report a revise verdict hands to the next
// round: the reviewer's summary behind RevisionPrefix, the completion's
// evidence, and the findings as next steps. Validate it like any report.
func RevisionHandoff(completion Report, r Review) Report {
	evidence := slices.Clone(completion.Evidence)
	if evidence == nil {
		evidence = []string{}
	}
	steps := slices.Clone(r.Findings)
	if steps == nil {
		steps = []string{}
	}
	return Report{Status: StatusContinue, Summary: RevisionPrefix + r.Summary, Evidence: evidence, NextSteps: steps, Blocker: ""}
}

// choiceKeys are the keys submit_review takes from a reviewer choosing
// between a round's candidates, exactly.
var choiceKeys = [...]string{"choice", "summary", "findings"}

// DecodeChoice parses a choosing reviewer's submit_review arguments
// strictly: a JSON object with exactly choice, summary and findings. The
// result's Verdict is VerdictChoose. Call ValidateChoice for the rules.
func DecodeChoice(data []byte) (Review, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return Review{}, fmt.Errorf("choice is not a JSON object (keys %s)", strings.Join(choiceKeys[:], ", "))
	}
	for _, key := range choiceKeys {
		if v, ok := raw[key]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return Review{}, fmt.Errorf("choice is missing the required key %q", key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		if !slices.Contains(choiceKeys[:], key) {
			return Review{}, fmt.Errorf("choice has the unknown key %q (allowed: %s)", key, strings.Join(choiceKeys[:], ", "))
		}
	}
	var p struct {
		Choice   int      `json:"choice"`
		Summary  string   `json:"summary"`
		Findings []string `json:"findings"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return Review{}, fmt.Errorf("choice has a field of the wrong type: %w", err)
	}
	return Review{Verdict: VerdictChoose, Choice: p.Choice, Summary: p.Summary, Findings: p.Findings}, nil
}

// ValidateChoice applies the rules of a choice: one of numbers, a
// non-empty trimmed summary, findings of non-empty trimmed strings, and the
// compact JSON within maxChars code points.
func ValidateChoice(r Review, numbers []int, maxChars int) error {
	if r.Verdict != VerdictChoose || !slices.Contains(numbers, r.Choice) {
		return invalid("choice", "must be the number of a candidate (one of %v); got %d", numbers, r.Choice)
	}
	if err := checkSummaryAndFindings(r); err != nil {
		return err
	}
	b, err := json.Marshal(struct {
		Choice   int      `json:"choice"`
		Summary  string   `json:"summary"`
		Findings []string `json:"findings"`
	}{r.Choice, r.Summary, r.Findings})
	if err != nil {
		return err
	}
	if n := utf8.RuneCount(b); n > maxChars {
		return invalid("size", "the choice's compact JSON is %d characters, over the limit of %d; shorten the summary or the findings", n, maxChars)
	}
	return nil
}

// checkSummaryAndFindings applies what every review shares: a non-empty
// trimmed summary and findings an array of non-empty trimmed strings.
func checkSummaryAndFindings(r Review) error {
	if err := checkText("summary", r.Summary, false); err != nil {
		return err
	}
	if r.Findings == nil {
		return invalid("findings", "must be an array ([] when empty), not null")
	}
	for i, f := range r.Findings {
		if err := checkText(fmt.Sprintf("findings[%d]", i), f, false); err != nil {
			return err
		}
	}
	return nil
}
