package workflows

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"go.temporal.io/sdk/workflow"
)

// The status query's bounds, so its answer stays far below Temporal's
// message limits however long a run goes: the last MaxStatusRounds rounds,
// each summary cut at MaxStatusSummaryChars code points with cutMarker and
// at most MaxStatusRestored restored paths named (each cut at
// MaxStatusPathChars; then how many more). So the describe update's answer,
// which is written to history, stays under 1 MiB too.
const (
	MaxStatusRounds       = 50
	MaxStatusSummaryChars = 500
	MaxStatusRestored     = 3
	MaxStatusPathChars    = 128
	cutMarker             = " [cut at %d of %d characters]"
)

// boundedRounds is the tail of rounds the status shows, with the number of
// rounds left out.
func boundedRounds(rounds []RoundSummary) ([]RoundSummary, int) {
	omitted := max(len(rounds)-MaxStatusRounds, 0)
	shown := make([]RoundSummary, 0, len(rounds)-omitted)
	for _, r := range rounds[omitted:] {
		r.Summary = cutText(r.Summary, MaxStatusSummaryChars)
		r.Restored = boundedPaths(r.Restored)
		shown = append(shown, r)
	}
	return shown, omitted
}

// boundedPaths names at most MaxStatusRestored paths, each cut, then how
// many more there are.
func boundedPaths(paths []string) []string {
	if len(paths) == 0 {
		return paths
	}
	shown := make([]string, 0, MaxStatusRestored+1)
	for _, p := range paths[:min(len(paths), MaxStatusRestored)] {
		shown = append(shown, cutText(p, MaxStatusPathChars))
	}
	if n := len(paths); n > MaxStatusRestored {
		shown = append(shown, fmt.Sprintf("... and %d more", n-MaxStatusRestored))
	}
	return shown
}

// cutText keeps the first limit code points of s and says where and how
// much it cut.
func cutText(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	cut, i := 0, 0
	for i = range s {
		if cut == limit {
			break
		}
		cut++
	}
	return s[:i] + fmt.Sprintf(cutMarker, limit, n)
}

// MaxObjectiveBytes bounds an objective's size as JSON. Every round's input,
// every review's input and every continuation carry the objective, so it
// keeps those payloads under 1 MiB with a full handoff report beside it,
// even when the code-point limit (at most 262144) is met with 4-byte
// characters.
const MaxObjectiveBytes = 512 << 10

// objectiveSize refuses an objective over MaxObjectiveBytes as JSON. The
// version marker is written only for such objectives: runs recorded before
// the bound accepted them.
func objectiveSize(ctx workflow.Context, objective string) error {
	encoded, err := json.Marshal(objective)
	if err != nil || len(encoded)-2 <= MaxObjectiveBytes {
		return nil
	}
	if workflow.GetVersion(ctx, versionObjectiveBytes, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	return inputErr(fieldObjective, "is %d bytes as JSON, over the limit of %d bytes (a run carries its objective in every round's input; put long material in a workspace file and name it)",
		len(encoded)-2, MaxObjectiveBytes)
}
