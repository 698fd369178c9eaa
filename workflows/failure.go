package workflows

import (
	"github.com/ralph-temporal/ralph/internal/runusage"
	"github.com/ralph-temporal/ralph/usage"
)

// CancelledDetails are the details of a cancelled run's CanceledError: the
// rounds it finished and the whole run's usage, the cancelled round's
// included.
type CancelledDetails struct {
	Round    int         `json:"round"`
	RunUsage usage.Usage `json:"runUsage"`
}

// RunUsageOf reads a Ralph run's whole usage out of the error it ended with
// (a RoundFailed or InvalidReport failure, or a cancel), also when the error
// is a child workflow's as its parent sees it. ok is false when the error
// carries none: an InvalidInput failure (nothing ran), a terminated or
// timed-out run, or a run of a build from before runUsage.
func RunUsageOf(err error) (u usage.Usage, ok bool) { return runusage.Of(err) }
