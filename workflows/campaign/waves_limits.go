package campaign

import "github.com/ralph-temporal/ralph/activities"

const (
	defaultMaxWavesCeiling = 20
	defaultMaxWaveTasks    = 30
)

// maxWavesCeiling is the ceiling of a campaign's maxWaves.
func maxWavesCeiling(l activities.Limits) int {
	if l.MaxWaves > 0 {
		return l.MaxWaves
	}
	return defaultMaxWavesCeiling
}

// maxWaveTasks is the most tasks one wave's plan may hold.
func maxWaveTasks(l activities.Limits) int {
	if l.MaxWaveTasks > 0 {
		return l.MaxWaveTasks
	}
	return defaultMaxWaveTasks
}
