package starterapp

import (
	"github.com/ralph-temporal/ralph/internal/tasklist"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// readTaskFile reads and checks a task file (internal/tasklist, as the
// Campaign workflow reads a tasksFile) as the campaign input it describes.
func readTaskFile(path string, data []byte, withinFile bool) (campaign.CampaignInput, error) {
	f, err := tasklist.Read(path, data, withinFile)
	if err != nil {
		return campaign.CampaignInput{}, err
	}
	x := f.Fields
	return campaign.CampaignInput{Tasks: f.Tasks, Base: x.Base, Branch: x.Branch, MaxParallel: x.MaxParallel,
		VerifyCommand: x.VerifyCommand, MaxMergeAttempts: x.MaxMergeAttempts, MergeBatch: x.MergeBatch, MergeLanes: x.MergeLanes,
		Approve: x.Approve, MaxTokens: x.MaxTokens, MaxMinutes: x.MaxMinutes, ProtectedPaths: x.ProtectedPaths}, nil
}
