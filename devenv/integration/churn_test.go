package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/bench"
)

// The load-and-churn scenario in small (the benchmark runs 500 runs on three
// workers: docs/benchmarks.md): 30 runs on two real worker processes that
// share one workspace root, both restarted in turn (SIGTERM, start) while
// the runs are under way. Every run must complete exactly once with its own
// report, its own round files in its own workspace, the usage the model
// served, no command left running and nothing left open. No timing is
// asserted.
func TestRealStackChurn(t *testing.T) {
	c := dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var progress strings.Builder
	h := &bench.Harness{
		Dir:       t.TempDir(),
		WorkerBin: filepath.Join(suite.binDir, "worker"),
		Dev:       bench.Target{Name: "test server", Address: suite.address, Namespace: suite.namespace, Client: c},
		Progress:  &progress,
		Tag:       "it",
	}
	res, err := h.Churn(ctx, h.Dev, bench.ChurnConfig{Runs: 30, Rounds: 3, Workers: 2, Latency: 20 * time.Millisecond, RollingRestart: true})
	if err != nil {
		t.Fatalf("churn: %v\n%s", err, progress.String())
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	if len(res.Events) != 4 {
		t.Errorf("disruptions = %q, want two SIGTERMs and two restarts", res.Events)
	}
	if res.ServedRequests < 30*3*2 {
		t.Errorf("the model served %d requests, want at least %d", res.ServedRequests, 30*3*2)
	}
	if t.Failed() {
		t.Log(progress.String())
		if entries, err := os.ReadDir(h.Dir); err == nil {
			for _, e := range entries {
				t.Log("harness dir:", e.Name())
			}
		}
	}
}
