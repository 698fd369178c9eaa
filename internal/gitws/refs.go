package gitws

import (
	"fmt"
	"strings"

	"github.com/ralph-temporal/ralph/internal/names"
)

// refComponent makes a workflow id usable inside a ref name, one-to-one: an
// id that is already a safe ref component is kept; any other has the
// characters git forbids (and '/', so one id stays one component) replaced,
// the forms git refuses (a leading '.', "..", a ".lock" suffix) broken up,
// and a hash of the exact id appended, so two ids never share a ref. The
// Ralph-Workflow-Id trailer keeps the exact id.
func refComponent(id string) string {
	s := strings.TrimLeft(strings.ReplaceAll(names.Sanitize(id, '-'), "..", "-."), ".")
	if strings.HasSuffix(s, ".lock") || strings.HasSuffix(s, ".") {
		s += "-"
	}
	// Bounded like a file name: refs are files under .git/refs.
	if s == id && s != "" && len(s) <= maxRefComponentBytes && !names.HasHashSuffix(s) {
		return s
	}
	return names.Hashed(s, id, maxRefComponentBytes)
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
