// Package runusage reads the whole usage a Ralph run's failure or cancel
// carries in its details (their runUsage field). A campaign charging a task
// loop's end and CheckTaskLoops reading a closed loop's read it here alike.
package runusage

import (
	"encoding/json"
	"errors"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/usage"
)

// details is what every Ralph failure's and cancel's details share.
type details struct {
	RunUsage *usage.Usage `json:"runUsage"`
}

// Of is the usage err's details carry (err an ApplicationError or a
// CanceledError, possibly wrapped); ok is false when they carry none.
func Of(err error) (u usage.Usage, ok bool) {
	var carrier interface{ Details(...any) error }
	var appErr *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &appErr) && appErr.HasDetails():
		carrier = appErr
	case errors.As(err, &canceled) && canceled.HasDetails():
		carrier = canceled
	default:
		return usage.Usage{}, false
	}
	// Decoded through any: an error from the server holds JSON payloads, one
	// made in this process (a test environment) the original struct, of
	// whichever details type.
	var v any
	if carrier.Details(&v) != nil {
		return usage.Usage{}, false
	}
	b, err := json.Marshal(v)
	var d details
	if err != nil || json.Unmarshal(b, &d) != nil || d.RunUsage == nil {
		return usage.Usage{}, false
	}
	return *d.RunUsage, true
}
