package campaign

import (
	"fmt"
	"strings"

	"github.com/ralph-temporal/ralph/internal/runes"
	"github.com/ralph-temporal/ralph/report"
)

// What a returned task's next go is told (SPEC 39, "a returned task sees
// why"): a summary naming the failure in one sentence, and in evidence the
// verify command's exit code and the tail of its output (at least the last
// minTailChars, cut at the start) or the conflicting paths. Keyed on
// CampaignEvidence in the recorded limits: a campaign begun before it
// writes the earlier report.
const (
	minTailChars     = 2000
	maxTailChars     = 6000
	maxCommandShown  = 120
	maxConflictPaths = 50
)

// shortCommand is a verify command as a sentence names it: its start, and
// "…" when it is longer.
func shortCommand(cmd string) string {
	cmd = strings.Join(strings.Fields(cmd), " ")
	if cut := runes.Prefix(cmd, maxCommandShown); cut != cmd {
		return cut + "…"
	}
	return cmd
}

// verifyEvidence is a failed verify as evidence: its exit code and output
// tail (maxTailChars at most; the report trims it to fit the handoff cap).
func verifyEvidence(v *report.Verification) []string {
	ev := []string{fmt.Sprintf("exit code %d", v.ExitCode)}
	if tail := strings.TrimSpace(runes.Suffix(v.Output, maxTailChars)); tail != "" {
		ev = append(ev, "output tail:\n"+tail)
	}
	return ev
}

func conflictEvidence(paths []string) []string {
	ev := []string{"conflicting paths (committed with their conflict markers):"}
	for i, p := range paths {
		if i == maxConflictPaths {
			ev = append(ev, fmt.Sprintf("… and %d more", len(paths)-i))
			break
		}
		ev = append(ev, p)
	}
	return ev
}

// keepEvidence keeps a returned task's evidence until its next go starts.
func (c *campaign) keepEvidence(t *taskState, ev []string) {
	if c.limits.CampaignEvidence && t.Phase == TaskReturned {
		t.Evidence = ev
	}
}

// evidenceReport is the back report with its evidence, the output tail cut
// at its start until the report fits the handoff cap (nil when even the
// shortest tail does not).
func (c *campaign) evidenceReport(t *taskState, failure string) *report.Report {
	for keep := maxTailChars; keep >= 200; keep -= 500 {
		ev := make([]string, len(t.Evidence))
		for i, e := range t.Evidence {
			if rest, ok := strings.CutPrefix(e, "output tail:\n"); ok {
				e = "output tail:\n" + strings.TrimSpace(runes.Suffix(rest, keep))
			}
			ev[i] = e
		}
		r := report.Report{
			Status: report.StatusContinue,
			Summary: fmt.Sprintf("The task's work was complete on its branch, but it did not merge into %s (attempt %d of %d): %s",
				c.settings.Branch, t.MergeAttempts, c.settings.MaxMergeAttempts, runes.Prefix(failure, 500)),
			Evidence: ev,
			NextSteps: []string{
				"The integration branch's head is merged into this workspace now; where it conflicted, the conflict markers are committed as they stand.",
				"Bring the task's change onto the integration branch's current content, keeping the task's intent and what the other tasks landed, until the verify command passes; then report complete.",
			},
		}
		if report.Validate(r, c.limits.MaxHandoffChars) == nil {
			return &r
		}
	}
	return nil
}
