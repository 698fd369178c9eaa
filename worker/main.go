// Command worker runs a Ralph worker: it connects with the standard Temporal
// client environment (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY,
// TEMPORAL_TLS_*), registers the Ralph workflow and its activities on the
// task queue (RALPH_TASK_QUEUE, default ralph) and serves until SIGINT or
// SIGTERM, then drains. Run `worker --help` for every setting.
package main

import (
	"os"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/workerapp"
)

func main() {
	os.Exit(workerapp.Main(os.Args[1:], config.OSEnv, os.Stderr))
}
