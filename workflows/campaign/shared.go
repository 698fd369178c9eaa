package campaign

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/workflows"
)

// The run's input rules and names the campaign shares, under the names the
// campaign's code reads them by.
const (
	fieldObjective     = workflows.FieldObjective
	fieldMaxRounds     = workflows.FieldMaxRounds
	fieldWorkspace     = workflows.FieldWorkspace
	fieldVerifyCommand = workflows.FieldVerifyCommand
	fieldMaxTokens     = workflows.FieldMaxTokens
	fieldMaxMinutes    = workflows.FieldMaxMinutes
	fieldProtected     = workflows.FieldProtectedPaths
)

var (
	inputErr           = workflows.InputErr
	invalidInput       = workflows.InvalidInput
	checkLimits        = workflows.CheckLimits
	isNull             = workflows.IsNull
	firstUnknown       = workflows.FirstUnknown
	parseObjective     = workflows.ParseObjective
	parseCount         = workflows.ParseCount
	parseBudget        = workflows.ParseBudget
	parseVerifyCommand = workflows.ParseVerifyCommand
	parseProtected     = workflows.ParseProtected
	failedUsage        = workflows.FailedUsage
	shortCommit        = workflows.ShortCommit
	notifyDetached     = workflows.NotifyDetached
)

// update is one update the campaign handles: its handler and validator.
type update struct {
	name      string
	handler   any
	validator any
}

// setUpdates installs updates, each with its validator.
func setUpdates(ctx workflow.Context, updates []update) error {
	for _, u := range updates {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, u.name, u.handler,
			workflow.UpdateHandlerOptions{Validator: u.validator}); err != nil {
			return fmt.Errorf("register the %s update: %w", u.name, err)
		}
	}
	return nil
}
