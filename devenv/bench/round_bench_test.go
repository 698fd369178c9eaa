package bench

import (
	"fmt"
	"io"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// BenchmarkRunRoundInstantModel is the in-activity cost of one Ralph round
// without a Temporal server: RunRound in the SDK's test activity environment
// against a scripted model that submits a report at once (workspace lock,
// transcript, one HTTP round trip, report validation, heartbeat goroutine).
// It is the part of the orchestration-overhead benchmark that Ralph adds to
// a bare activity. Run: go test -run '^$' -bench RunRound ./bench/
func BenchmarkRunRoundInstantModel(b *testing.B) {
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return submitContinue("round done")
	}})
	defer model.Close()
	dir := b.TempDir()
	cfg, err := config.LoadWorker(nil, config.MapEnv{
		"RALPH_MODEL": "bench-model", "OPENAI_BASE_URL": model.BaseURL(), "OPENAI_API_KEY": benchAPIKey,
		"RALPH_WORKSPACE_ROOT": dir + "/workspaces", "RALPH_SESSION_DIR": dir + "/sessions",
	}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	acts, err := activities.New(cfg.Activities)
	if err != nil {
		b.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(temporalserver.QuietLogger{})
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.RunRound, activity.RegisterOptions{Name: activities.RunRoundName})
	for i := 0; b.Loop(); i++ {
		_, err := env.ExecuteActivity(activities.RunRoundName, activities.RoundInput{
			Objective: "benchmark one round", Round: 1, MaxRounds: 2, Workspace: fmt.Sprintf("ws-%d", i%8),
			MaxHandoffChars: cfg.Activities.Limits.MaxHandoffChars,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
