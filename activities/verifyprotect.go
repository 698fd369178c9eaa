package activities

import (
	"fmt"
	"strings"

	"github.com/ralph-temporal/ralph/agent/tools"
	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/report"
)

// A verify the worker runs on a tree it made (a campaign's merged tree, a
// candidate's score) protects section 23's paths exactly as a round's verify
// does: the same matcher and snapshot (agent/tools/protect.go) mount what
// matches read-only and check every protected path again after the command.

// maxProtectedNoteChars bounds the list of changed paths a failed verify's
// output ends with.
const maxProtectedNoteChars = 1000

// protectedSets is what a worker-run verify protects: the given sets (a
// run's or a campaign task's patterns) and the worker's RALPH_PROTECTED_PATHS.
// A given set longer than tools.MaxProtectedPatterns (a task's patterns added
// to its campaign's) is split: "!" re-allows only within its own set, so the
// split only ever protects more.
func (a *Activities) protectedSets(given ...[]string) [][]string {
	var sets [][]string
	for _, set := range append(given, a.cfg.Limits.ProtectedPaths) {
		for len(set) > tools.MaxProtectedPatterns {
			sets, set = append(sets, set[:tools.MaxProtectedPatterns]), set[tools.MaxProtectedPatterns:]
		}
		if len(set) > 0 {
			sets = append(sets, set)
		}
	}
	return sets
}

// failProtected fails v for the protected paths its command changed and
// names them at the end of the output too: the reason the run failed,
// where a send-back (the tail of the output) shows it.
func failProtected(v *report.Verification, changed []string) {
	list := strings.Join(changed, ", ")
	if cut := runes.Prefix(list, maxProtectedNoteChars); cut != list {
		list = cut + "…"
	}
	v.ProtectedChanged = list
	note := fmt.Sprintf("\n[verify failed: the verify command changed protected paths (restored after it): %s]", list)
	v.Output = runes.Suffix(v.Output+note, report.MaxVerificationOutput)
}
