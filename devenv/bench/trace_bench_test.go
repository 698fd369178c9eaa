package bench

import (
	"context"
	"fmt"
	"io"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/traces"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// BenchmarkRoundTracing is the per-round cost of tracing: RunRound (as in
// BenchmarkRunRoundInstantModel) with a round of four model calls and three
// tool calls (list_files, write_file, read_file, then submit_report), with
// tracing off and on. On, every span goes through the worker's own
// provider (batch span processor, OTLP/HTTP exporter) to an OTLP receiver
// on loopback that decodes each export. Run:
// go test -run '^$' -bench RoundTracing -benchtime 200x -count 5 ./devenv/bench/
func BenchmarkRoundTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) { benchRoundTracing(b, on) })
	}
}

func benchRoundTracing(b *testing.B, on bool) {
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		switch req.Step() {
		case 0:
			return fakeopenai.Tools(fakeopenai.CallJSON("list_files", map[string]string{}))
		case 1:
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "notes.txt", "content": "tracing benchmark\n"}))
		case 2:
			return fakeopenai.Tools(fakeopenai.CallJSON("read_file", map[string]string{"path": "notes.txt"}))
		default:
			return submitContinue("round done")
		}
	}})
	defer model.Close()
	rcv := testkit.NewOTLPReceiver()
	defer rcv.Close()
	dir := b.TempDir()
	env := config.MapEnv{
		"RALPH_MODEL": "bench-model", "OPENAI_BASE_URL": model.BaseURL(), "OPENAI_API_KEY": benchAPIKey,
		"RALPH_WORKSPACE_ROOT": dir + "/workspaces", "RALPH_SESSION_DIR": dir + "/sessions",
	}
	if on {
		env[config.EnvOTLPEndpoint] = rcv.Endpoint()
	}
	cfg, err := config.LoadWorker(nil, env, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	tp, err := traces.Start(context.Background(), cfg.Tracing)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Activities.Agent.Tracing = tp.Options()
	acts, err := activities.New(cfg.Activities)
	if err != nil {
		b.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(temporalserver.QuietLogger{})
	aenv := suite.NewTestActivityEnvironment()
	aenv.RegisterActivityWithOptions(acts.RunRound, activity.RegisterOptions{Name: activities.RunRoundName})
	for i := 0; b.Loop(); i++ {
		_, err := aenv.ExecuteActivity(activities.RunRoundName, activities.RoundInput{
			Objective: "benchmark one traced round", Round: 1, MaxRounds: 2, Workspace: fmt.Sprintf("ws-%d", i%8),
			MaxHandoffChars: cfg.Activities.Limits.MaxHandoffChars,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// The export is part of the cost: flush inside the timed loop's budget.
	if err := tp.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if on {
		want := b.N * 9 // ralph.round, 4 chat, 4 execute_tool (submit_report included)
		if got := len(rcv.Spans()); got < want {
			b.Fatalf("the receiver got %d spans for %d rounds, want at least %d", got, b.N, want)
		}
		b.ReportMetric(float64(len(rcv.Spans()))/float64(b.N), "spans/round")
	}
}
