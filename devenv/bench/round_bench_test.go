package bench

import (
	"fmt"
	"testing"

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
	run := roundRunner(b, roundWorkerConfig(b, model, nil))
	for i := 0; b.Loop(); i++ {
		if _, err := run("benchmark one round", fmt.Sprintf("ws-%d", i%8)); err != nil {
			b.Fatal(err)
		}
	}
}
