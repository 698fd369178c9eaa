package bench

import (
	"io"
	"maps"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// The in-activity benchmarks run RunRound without a Temporal server, with
// the worker binary's own configuration.

// roundWorkerConfig is that configuration for a scripted model: workspaces
// and sessions in a fresh temporary directory, extra settings on top.
func roundWorkerConfig(b *testing.B, model *fakeopenai.Server, extra config.MapEnv) config.Worker {
	b.Helper()
	dir := b.TempDir()
	env := config.MapEnv{
		"RALPH_MODEL": "bench-model", "OPENAI_BASE_URL": model.BaseURL(), "OPENAI_API_KEY": benchAPIKey,
		"RALPH_WORKSPACE_ROOT": dir + "/workspaces", "RALPH_SESSION_DIR": dir + "/sessions",
	}
	maps.Copy(env, extra)
	cfg, err := config.LoadWorker(nil, env, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	// The SDK's test activity environment has no server: its client is a
	// mock, so heartbeats go through the SDK (as they do in unit tests).
	cfg.Activities.RecordHeartbeat = activities.HeartbeatThroughSDK
	return cfg
}

// roundRunner builds cfg's activities and registers RunRound in the SDK's
// test activity environment; the function it returns runs round 1 of 2 of
// objective in workspace.
func roundRunner(b *testing.B, cfg config.Worker) func(objective, workspace string) (converter.EncodedValue, error) {
	b.Helper()
	acts, err := activities.New(cfg.Activities)
	if err != nil {
		b.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(temporalserver.QuietLogger{})
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.RunRound, activity.RegisterOptions{Name: activities.RunRoundName})
	return func(objective, workspace string) (converter.EncodedValue, error) {
		return env.ExecuteActivity(activities.RunRoundName, activities.RoundInput{
			Objective: objective, Round: 1, MaxRounds: 2, Workspace: workspace,
			MaxHandoffChars: cfg.Activities.Limits.MaxHandoffChars,
		})
	}
}
