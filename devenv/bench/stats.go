package bench

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs; 0 for
// an empty slice.
func Percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Median is the 50th percentile (nearest rank).
func Median(xs []time.Duration) time.Duration { return Percentile(xs, 50) }

// Mean of xs; 0 for an empty slice.
func Mean(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range xs {
		sum += x
	}
	return sum / time.Duration(len(xs))
}

// Max of xs; 0 for an empty slice.
func Max(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

// Min of xs; 0 for an empty slice.
func Min(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	return slices.Min(xs)
}

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// secs formats a duration in seconds with two decimals.
func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// ratio formats a/b with two decimals ("n/a" when b is 0).
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

// Table is one result table, rendered as Markdown.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Markdown renders the table with aligned columns.
func (t Table) Markdown() string {
	widths := make([]int, len(t.Header))
	for i, h := range t.Header {
		widths[i] = len([]rune(h))
	}
	for _, r := range t.Rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", widths[i]-len([]rune(c))))
		}
		b.WriteString("\n")
	}
	line(t.Header)
	b.WriteString("|")
	for _, w := range widths {
		b.WriteString(strings.Repeat("-", w+2) + "|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(r)
	}
	return b.String()
}

// Goal is one goal a benchmark is judged on, with the numbers that judge
// it: the verdict comes from the measurement, never from the text.
type Goal struct {
	What     string // the goal as the SPEC states it
	Measured string // the numbers it is judged on; empty: not measured
	Met      bool
}

// Verdict is "met", "not met" or "not measured".
func (g Goal) Verdict() string {
	switch {
	case g.Measured == "":
		return "not measured"
	case g.Met:
		return "met"
	}
	return "not met"
}

// Section is the result of one benchmark: a title, the command that
// reproduces it, tables, the goals it is judged on and notes.
type Section struct {
	Title   string
	Command string
	Intro   string
	Tables  []Table
	Goals   []Goal
	Notes   []string
}

// GoalsTable is every goal of secs, one row each, with its section.
func GoalsTable(secs []Section) Table {
	t := Table{Header: []string{"benchmark", "goal", "measured", "verdict"}}
	for _, s := range secs {
		for _, g := range s.Goals {
			t.Add(s.Title, g.What, g.Measured, "**"+g.Verdict()+"**")
		}
	}
	return t
}

// Markdown renders the section.
func (s Section) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", s.Title)
	if s.Command != "" {
		fmt.Fprintf(&b, "Reproduce: `%s`\n\n", s.Command)
	}
	if s.Intro != "" {
		fmt.Fprintf(&b, "%s\n\n", s.Intro)
	}
	for _, t := range s.Tables {
		b.WriteString(t.Markdown())
		b.WriteString("\n")
	}
	for _, g := range s.Goals {
		if g.Measured == "" {
			fmt.Fprintf(&b, "- goal: %s: **%s**\n", g.What, g.Verdict())
			continue
		}
		fmt.Fprintf(&b, "- goal: %s — %s: **%s**\n", g.What, g.Measured, g.Verdict())
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if len(s.Notes)+len(s.Goals) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
