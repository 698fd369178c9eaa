package gitws

import (
	"context"
	"fmt"
)

// KeepCandidate commits whatever a candidate's clone dir holds (its work
// tree as it stands, unchanged files included: a commit even when it wrote
// nothing) onto base and keeps that commit on ref in the workspace
// repository main and, in remote mode, on the remote, as FinishCandidate
// keeps a handed-off candidate's. It is for a candidate that failed or was
// cancelled: what it wrote is kept, as a lost attempt's leftovers are
// (saveLeftovers). why ("failed", "cancelled") goes into the message.
func (g *Git) KeepCandidate(ctx context.Context, main, dir, base, ref string, r Round, k int, why string) (string, error) {
	tree, err := g.candidateTree(ctx, main, dir)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("ralph: round %d candidate %d %s: what its tree held\n\n%s: %s\n%s: %d\n%s: %d\n",
		r.Round, k, oneLine(why), TrailerWorkflowID, oneLine(r.WorkflowID), TrailerRound, r.Round, TrailerAttempt, r.Attempt)
	commit, err := g.commitTree(ctx, main, tree, msg, base)
	if err != nil {
		return "", err
	}
	if err := g.setRef(ctx, main, ref, commit, ""); err != nil {
		return "", err
	}
	if g.cfg.Mode == ModeRemote {
		if err := g.pushRef(ctx, main, "+"+commit+":"+ref); err != nil {
			return "", err
		}
	}
	return commit, nil
}
