package report

import (
	"fmt"
	"unicode/utf8"
)

// Outcomes of a whole run, as carried in the workflow result's status field.
const (
	OutcomeComplete      = "complete"
	OutcomeBlocked       = "blocked"
	OutcomeBudgetLimited = "budget-limited"
)

// TruncationMarker ends a result text that was cut; it is 14 code points long.
const TruncationMarker = "\n… [truncated]"

// Headline is the one line that opens the human-facing result text. It says a
// worker *reported* the outcome: completion is never presented as verified.
func Headline(outcome string, rounds int) (string, error) {
	switch outcome {
	case OutcomeComplete:
		return fmt.Sprintf("A worker reported completion after %s.", roundsPhrase(rounds)), nil
	case OutcomeBlocked:
		return fmt.Sprintf("A worker reported a blocker after %s.", roundsPhrase(rounds)), nil
	case OutcomeBudgetLimited:
		return fmt.Sprintf("The %d-round limit was reached with work remaining.", rounds), nil
	default:
		return "", fmt.Errorf("unknown outcome %q (want complete, blocked or budget-limited)", outcome)
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
func ResultText(outcome string, rounds int, r Report, maxChars int) (string, error) {
	head, err := Headline(outcome, rounds)
	if err != nil {
		return "", err
	}
	body, err := Indented(r)
	if err != nil {
		return "", err
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
		return prefix(TruncationMarker, max)
	}
	return prefix(text, max-markerLen) + TruncationMarker
}

// prefix returns the first n code points of s.
func prefix(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
