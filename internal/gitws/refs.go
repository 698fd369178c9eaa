package gitws

import (
	"fmt"
	"strings"

	"github.com/ralph-temporal/ralph/internal/names"
)

// refComponent makes a workflow id usable inside a ref name: characters git
// forbids (and '/', so one id stays one component) become '-', and the
// forms git refuses (a leading '.', "..", a ".lock" suffix, "@{") are broken
// up. Distinct ids that map to one name still get distinct refs per round
// and attempt; the Ralph-Workflow-Id trailer keeps the exact id.
func refComponent(id string) string {
	// Bounded like a file name: refs are files under .git/refs.
	s := strings.ReplaceAll(names.Shorten(names.Sanitize(id, '-'), maxRefComponentBytes), "..", "-.")
	s = strings.TrimLeft(s, ".")
	if strings.HasSuffix(s, ".lock") || strings.HasSuffix(s, ".") {
		s += "-"
	}
	if s == "" {
		s = "-"
	}
	return s
}

// maxRefComponentBytes leaves room in one file name for what git appends.
const maxRefComponentBytes = 200

// attemptRef is <prefix><workflow id>/round-<R>-attempt-<A>.
func attemptRef(prefix, workflowID string, round, attempt int) string {
	return fmt.Sprintf("%s%s/round-%d-attempt-%d", prefix, refComponent(workflowID), round, attempt)
}

// AbandonedRef names where the uncommitted leftovers of a lost attempt are
// saved.
func AbandonedRef(workflowID string, round, attempt int) string {
	return attemptRef(AbandonedRefPrefix, workflowID, round, attempt)
}

// UnpushedRef names where a checkpoint whose push failed is kept.
func UnpushedRef(workflowID string, round, attempt int) string {
	return attemptRef(UnpushedRefPrefix, workflowID, round, attempt)
}

// Branch is the remote branch of a workspace.
func Branch(workspace string) string { return BranchPrefix + workspace }
