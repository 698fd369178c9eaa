package runusage

import (
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/usage"
)

type roundFailed struct {
	Round    int         `json:"round"`
	RunUsage usage.Usage `json:"runUsage"`
}

// The usage is read from an error made in this process and from the same
// error after a trip through the server's failure form (JSON payloads),
// wrapped or not; an error without it reads as none.
func TestOfReadsTheDetailsEitherForm(t *testing.T) {
	want := usage.Usage{ModelCalls: 3, PromptTokens: 1200, CompletionTokens: 80}
	d := roundFailed{Round: 2, RunUsage: want}
	local := map[string]error{
		"failure": temporal.NewNonRetryableApplicationError("round 2 failed", "RoundFailed", nil, d),
		"cancel":  temporal.NewCanceledError(d),
	}
	fc := temporal.GetDefaultFailureConverter()
	for name, err := range local {
		for form, e := range map[string]error{
			"local":   err,
			"server":  fc.FailureToError(fc.ErrorToFailure(err)),
			"wrapped": fmt.Errorf("child: %w", fc.FailureToError(fc.ErrorToFailure(err))),
		} {
			if u, ok := Of(e); !ok || u != want {
				t.Errorf("%s, %s: Of = %+v, %v; want %+v", name, form, u, ok, want)
			}
		}
	}
	for name, err := range map[string]error{
		"plain":          errors.New("boom"),
		"no details":     temporal.NewApplicationError("bad input", "InvalidInput"),
		"other details":  temporal.NewApplicationError("bad input", "InvalidInput", map[string]string{"field": "x"}),
		"cancel without": temporal.NewCanceledError(),
	} {
		if u, ok := Of(err); ok {
			t.Errorf("%s: Of = %+v, want none", name, u)
		}
	}
}
