package campaign

import "github.com/ralph-temporal/ralph/activities"

// PLACEHOLDER until activities.Limits gains MaxWaves and MaxWaveTasks
// (RALPH_MAX_WAVES, RALPH_MAX_WAVE_TASKS; the PlanWave helper adds them):
// these return their defaults. At the merge, replace the bodies with
// l.MaxWaves and l.MaxWaveTasks (falling back to the defaults when 0).
const (
	defaultMaxWavesCeiling = 20
	defaultMaxWaveTasks    = 30
)

// maxWavesCeiling is the ceiling of a campaign's maxWaves.
func maxWavesCeiling(activities.Limits) int { return defaultMaxWavesCeiling }

// maxWaveTasks is the most tasks one wave's plan may hold.
func maxWaveTasks(activities.Limits) int { return defaultMaxWaveTasks }
