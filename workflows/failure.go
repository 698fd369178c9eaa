package workflows

import (
	"encoding/json"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/usage"
)

// CancelledDetails are the details of a cancelled run's CanceledError: the
// rounds it finished and the whole run's usage, the cancelled round's
// included.
type CancelledDetails struct {
	Round    int         `json:"round"`
	RunUsage usage.Usage `json:"runUsage"`
}

// runUsageDetails is what every Ralph failure's and cancel's details share.
type runUsageDetails struct {
	RunUsage *usage.Usage `json:"runUsage"`
}

// RunUsageOf reads a Ralph run's whole usage out of the error it ended with
// (a RoundFailed or InvalidReport failure, or a cancel), also when the error
// is a child workflow's as its parent sees it. ok is false when the error
// carries none: an InvalidInput failure (nothing ran), a terminated or
// timed-out run, or a run of a build from before runUsage.
func RunUsageOf(err error) (u usage.Usage, ok bool) {
	var details interface{ Details(...any) error }
	var appErr *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &appErr) && appErr.HasDetails():
		details = appErr
	case errors.As(err, &canceled) && canceled.HasDetails():
		details = canceled
	default:
		return usage.Usage{}, false
	}
	// Decoded through any: an error from the server holds JSON payloads, one
	// made in this process (a test environment) the original struct, of
	// whichever details type.
	var v any
	if details.Details(&v) != nil {
		return usage.Usage{}, false
	}
	b, err := json.Marshal(v)
	var d runUsageDetails
	if err != nil || json.Unmarshal(b, &d) != nil || d.RunUsage == nil {
		return usage.Usage{}, false
	}
	return *d.RunUsage, true
}
