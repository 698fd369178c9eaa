package report

import (
	"fmt"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// Outcomes of a whole run, as carried in the workflow result's status field.
const (
	OutcomeComplete      = "complete"
	OutcomeBlocked       = "blocked"
	OutcomeBudgetLimited = "budget-limited"
	OutcomeStopped       = "stopped"
)

// TruncationMarker ends a result text that was cut; it is 14 code points long.
const TruncationMarker = "\n… [truncated]"

// Budget limits a budget-limited run names.
const (
	LimitRounds = "rounds"
	LimitTokens = "tokens"
	LimitTime   = "time"
	LimitIdle   = "idle"
)

// Outcome is what a human-facing result text says about a finished run.
type Outcome struct {
	Status string
	Rounds int
	// Limit names the budget of a budget-limited run.
	Limit string
	// Verification is the passing verify run of a completed run, if any.
	Verification *Verification
	// Report is the final report; nil only for a run stopped before any round finished.
	Report *Report
	// Reason is a stopped run's stop reason.
	Reason string
	// Review is the independent reviewer's approval of a completed run.
	Review *Review
}

// Headline is the one line that opens the human-facing result text. It says a
// worker *reported* the outcome; only a passing verify command is named as a
// check, and then as exactly what ran.
func Headline(o Outcome) (string, error) {
	rounds := roundsPhrase(o.Rounds)
	switch o.Status {
	case OutcomeComplete:
		if o.Review != nil && o.Review.Verdict == VerdictApprove {
			// The reviewer is another model: its approval is named as
			// exactly that, beside the worker's own report.
			line := fmt.Sprintf("An independent reviewer (%s) approved; a worker reported completion after %s", o.Review.Model, rounds)
			if o.Verification.Passed() {
				return fmt.Sprintf("%s; the verify command passed (exit 0): %s", line, o.Verification.Command), nil
			}
			return line + ".", nil
		}
		if o.Verification.Passed() {
			return fmt.Sprintf("A worker reported completion after %s; the verify command passed (exit 0): %s", rounds, o.Verification.Command), nil
		}
		return fmt.Sprintf("A worker reported completion after %s.", rounds), nil
	case OutcomeBlocked:
		return fmt.Sprintf("A worker reported a blocker after %s.", rounds), nil
	case OutcomeBudgetLimited:
		return budgetHeadline(o.Limit, o.Rounds)
	case OutcomeStopped:
		if o.Reason != "" {
			return fmt.Sprintf("The run was stopped by an operator after %s: %s", rounds, o.Reason), nil
		}
		return fmt.Sprintf("The run was stopped by an operator after %s.", rounds), nil
	default:
		return "", fmt.Errorf("unknown outcome %q (want complete, blocked, budget-limited or stopped)", o.Status)
	}
}

func budgetHeadline(limit string, rounds int) (string, error) {
	switch limit {
	case LimitRounds, "":
		return fmt.Sprintf("The %d-round limit was reached with work remaining.", rounds), nil
	case LimitTokens:
		return fmt.Sprintf("The run's budget of tokens was spent after %s, with work remaining.", roundsPhrase(rounds)), nil
	case LimitTime:
		return fmt.Sprintf("The run's time budget ran out after %s, with work remaining.", roundsPhrase(rounds)), nil
	case LimitIdle:
		return fmt.Sprintf("The idle budget was reached after %s: the last rounds left the workspace unchanged, with work remaining.", roundsPhrase(rounds)), nil
	default:
		return "", fmt.Errorf("unknown budget limit %q (want rounds, tokens, time or idle)", limit)
	}
}

func roundsPhrase(n int) string {
	if n == 1 {
		return "1 round"
	}
	return fmt.Sprintf("%d rounds", n)
}

// ResultText renders the human-facing text of a finished run: the headline,
// then the final report as indented JSON, bounded by maxChars code points.
func ResultText(o Outcome, maxChars int) (string, error) {
	head, err := Headline(o)
	if err != nil {
		return "", err
	}
	body := "(no round finished, so there is no report)"
	if o.Report != nil {
		if body, err = Indented(*o.Report); err != nil {
			return "", err
		}
	}
	if r := o.Review; r != nil {
		body += fmt.Sprintf("\nIndependent review (%s, session %s): %s: %s", r.Model, r.SessionID, r.Verdict, r.Summary)
		for _, f := range r.Findings {
			body += "\n- " + f
		}
	}
	return Truncate(head+"\n"+body, maxChars), nil
}

// Truncate bounds text to max code points. Longer text is cut to max-14 code
// points followed by TruncationMarker; when max <= 14 the result is the first
// max code points of the marker. It only ever applies to text shown to people.
func Truncate(text string, max int) string {
	if max < 0 {
		max = 0
	}
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	markerLen := utf8.RuneCountInString(TruncationMarker)
	if max <= markerLen {
		return runes.Prefix(TruncationMarker, max)
	}
	return runes.Prefix(text, max-markerLen) + TruncationMarker
}
