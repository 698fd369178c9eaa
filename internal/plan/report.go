package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/tasklist"
)

// cutMark ends (or starts) a text that was cut to fit.
const cutMark = "…"

// OutcomeMerged is a task outcome of a wave report: its work is on the
// integration branch (the outcome the waves workflow writes for it).
const OutcomeMerged = "merged"

// Validate checks a wave report's shape: a wave number, known task ids,
// each with an outcome, a verify run with its command and head.
func (r WaveReport) Validate() error {
	if r.Wave < 1 {
		return broke(RuleWaveReport, "wave must be at least 1, got %d", r.Wave)
	}
	if r.Omitted < 0 {
		return broke(RuleWaveReport, "omitted must not be negative, got %d", r.Omitted)
	}
	for i, t := range r.Tasks {
		switch {
		case !tasklist.ValidID(t.ID):
			return broke(RuleWaveReport, "tasks[%d]: id %q is not a task id", i, t.ID)
		case strings.TrimSpace(t.Outcome) == "":
			return broke(RuleWaveReport, "tasks[%d] (%s): outcome is empty", i, t.ID)
		}
	}
	if v := r.Verify; v != nil && (strings.TrimSpace(v.Command) == "" || v.Head == "") {
		return broke(RuleWaveReport, "verify needs its command and the head it ran on")
	}
	return nil
}

// Size is the code points of the report's compact JSON (HTML not escaped):
// what the handoff cap counts, as it counts a round's report.
func (r WaveReport) Size() int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r) // plain strings and numbers: it cannot fail
	return utf8.RuneCount(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// Fit returns the report within limit (Size): when it is over, each
// task's failure is cut (its start kept) and the verify output's tail cut
// (its end kept, at four times a failure's share), to the largest share
// that fits; then the summary and a rejection are cut likewise. What names
// a task (id, outcome, merge commit) is never cut: when even the names pass
// the limit (a wave of hundreds of tasks), tasks are left out, merged ones
// first, and counted in Omitted. A report that does not fit even with no
// task listed is an error naming its size.
func (r WaveReport) Fit(limit int) (WaveReport, error) {
	if err := r.Validate(); err != nil {
		return WaveReport{}, err
	}
	if r.Size() <= limit {
		return r, nil
	}
	longest := 0
	for _, t := range r.Tasks {
		longest = max(longest, runes(t.Failure))
	}
	if r.Verify != nil {
		longest = max(longest, (runes(r.Verify.OutputTail)+3)/4)
	}
	if out, ok := largestFit(longest, limit, func(k int) WaveReport { return r.cutDetails(k) }); ok {
		return out, nil
	}
	bare := r.cutDetails(0)
	longest = max(runes(r.Summary), runes(r.Rejected))
	if out, ok := largestFit(longest, limit, func(k int) WaveReport { return bare.cutTexts(k) }); ok {
		return out, nil
	}
	// Keep the summary, the rejection and the verify tail at a modest share
	// and list as many tasks as fit, those that did not merge first.
	base := r.cutDetails(min(longest, 100)).cutTexts(200)
	if out, ok := largestFit(len(r.Tasks), limit, func(k int) WaveReport { return base.keepTasks(k) }); ok {
		return out, nil
	}
	return WaveReport{}, broke(RuleWaveReportCap, "the wave report is %d characters of JSON with no task listed and every text cut; the limit is %d",
		base.keepTasks(0).Size(), limit)
}

// keepTasks is r listing n of its tasks (in their order), leaving out merged
// tasks first, then the last ones; Omitted counts those left out.
func (r WaveReport) keepTasks(n int) WaveReport {
	out := r
	drop := len(r.Tasks) - n
	gone := make([]bool, len(r.Tasks))
	for pass := 0; pass < 2 && drop > 0; pass++ {
		for i := len(r.Tasks) - 1; i >= 0 && drop > 0; i-- {
			if !gone[i] && (pass == 1 || r.Tasks[i].Outcome == OutcomeMerged) {
				gone[i], drop = true, drop-1
			}
		}
	}
	out.Tasks = make([]TaskOutcome, 0, n)
	for i, t := range r.Tasks {
		if !gone[i] {
			out.Tasks = append(out.Tasks, t)
		}
	}
	out.Omitted = r.Omitted + len(r.Tasks) - n
	return out
}

// largestFit finds, by bisection, the largest share k in [0, longest] whose
// cut report fits limit.
func largestFit(longest, limit int, cut func(k int) WaveReport) (WaveReport, bool) {
	if cut(0).Size() > limit {
		return WaveReport{}, false
	}
	lo, hi := 0, longest // cut(lo) fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if cut(mid).Size() <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return cut(lo), true
}

// cutDetails is r with each failure at most k runes and the verify tail at
// most 4k, copies only.
func (r WaveReport) cutDetails(k int) WaveReport {
	out := r
	out.Tasks = make([]TaskOutcome, len(r.Tasks))
	for i, t := range r.Tasks {
		t.Failure = head(t.Failure, k)
		out.Tasks[i] = t
	}
	if r.Verify != nil {
		v := *r.Verify
		v.OutputTail = tail(v.OutputTail, 4*k)
		out.Verify = &v
	}
	return out
}

func (r WaveReport) cutTexts(k int) WaveReport {
	out := r
	out.Summary, out.Rejected = head(r.Summary, k), head(r.Rejected, k)
	return out
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// head keeps the first n runes of s, marking a cut.
func head(s string, n int) string {
	if n == 0 {
		return ""
	}
	count := 0
	for i := range s {
		if count == n-1 {
			if utf8.RuneCountInString(s[i:]) == 1 {
				return s // exactly n runes
			}
			return s[:i] + cutMark
		}
		count++
	}
	return s
}

// tail keeps the last n runes of s, marking a cut.
func tail(s string, n int) string {
	if n == 0 {
		return ""
	}
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s
	}
	skip := total - n + 1
	for i := range s {
		if skip == 0 {
			return cutMark + s[i:]
		}
		skip--
	}
	return cutMark
}

// Render is the report as the next wave's planner reads it (Markdown).
func (r WaveReport) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Wave %d's plan: %s\n", r.Wave, orNone(r.Summary))
	if len(r.Tasks) == 0 {
		b.WriteString("\nIt ran no task.\n")
	} else {
		b.WriteString("\nIts tasks:\n")
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "(%d more tasks are not listed, to keep this report within its cap; those that merged are left out first.)\n", r.Omitted)
	}
	for _, t := range r.Tasks {
		fmt.Fprintf(&b, "- %s: %s", t.ID, t.Outcome)
		if t.MergeCommit != "" {
			fmt.Fprintf(&b, " (merge commit %s)", t.MergeCommit)
		}
		if t.Failure != "" {
			fmt.Fprintf(&b, "; failure: %s", indentLines(t.Failure))
		}
		b.WriteString("\n")
	}
	if v := r.Verify; v != nil {
		fmt.Fprintf(&b, "\nThe planner said complete, but the verify command `%s` failed on the integration head %s (exit code %d). The end of its output:\n```\n%s\n```\n",
			v.Command, v.Head, v.ExitCode, strings.ReplaceAll(strings.TrimRight(v.OutputTail, "\n"), "```", "'''"))
	}
	if r.Rejected != "" {
		fmt.Fprintf(&b, "\nA person rejected the last plan: %s\n", indentLines(r.Rejected))
	}
	return strings.TrimRight(b.String(), "\n")
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no summary)"
	}
	return indentLines(s)
}

// indentLines keeps a multi-line text inside its list item.
func indentLines(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
