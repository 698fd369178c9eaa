package activities

import (
	"context"
	"path/filepath"

	"github.com/ralph-temporal/ralph/report"
)

// VerifyHeadName is the activity that runs a campaign's verify command on
// its integration head (SPEC 40: a wave's planner said complete).
const VerifyHeadName = "VerifyHead"

// VerifyHeadInput names the line and the command to run on its head, with
// the paths the command may not change.
type VerifyHeadInput struct {
	Line           CampaignLine `json:"line"`
	VerifyCommand  string       `json:"verifyCommand"`
	ProtectedPaths []string     `json:"protectedPaths,omitempty"`
}

// VerifyHeadOutput is the head the command ran on and how it ended.
type VerifyHeadOutput struct {
	Head         string              `json:"head"`
	Verification report.Verification `json:"verification"`
}

// VerifyHead checks the integration head out in a scratch clone (created
// from the base when the branch is new, as a task's first go does) and runs
// the verify command on it in the sandbox, with the protections a merge's
// verify has. It changes nothing: a retried attempt runs it again.
func (a *Activities) VerifyHead(ctx context.Context, in VerifyHeadInput) (VerifyHeadOutput, error) {
	stop := campaignHeartbeat(ctx)
	defer stop()
	lock, err := a.lockWorkspace(ctx, filepath.Join(campaignDir(in.Line.Campaign), "verify-head"), func() {})
	if err != nil {
		return VerifyHeadOutput{}, err
	}
	defer lock.release()
	c, err := a.campaignGit(ctx, in.Line, "verify-head")
	if err != nil {
		return VerifyHeadOutput{}, err
	}
	defer c.remove(ctx)
	head, err := a.git.Integration(ctx, c.scratch, c.line)
	if err != nil {
		return VerifyHeadOutput{}, campaignStepError(err)
	}
	// A stack of no tasks is the head checked out, its tree within bounds.
	if _, _, _, err := a.git.MergeStack(ctx, c.scratch, in.Line.Campaign, head, nil); err != nil {
		return VerifyHeadOutput{}, campaignStepError(err)
	}
	v, err := a.verifyTree(ctx, c.scratch, in.VerifyCommand, a.protectedSets(in.ProtectedPaths))
	if err != nil {
		return VerifyHeadOutput{}, err
	}
	return VerifyHeadOutput{Head: head, Verification: *v}, nil
}
