package campaign

import "github.com/ralph-temporal/ralph/workflows"

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
