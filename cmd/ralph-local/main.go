// Command ralph-local runs one Ralph loop on this machine, for `make demo`:
// a Temporal dev server (installed from the Go module proxy when missing;
// state in .ralph/temporal.db, UI on 127.0.0.1:8233), the worker and the
// starter's foreground `run`, all under this one process. Without
// OPENAI_API_KEY and RALPH_MODEL the worker runs in demo mode against its
// scripted local model. Ctrl-C cancels the run, waits for it to close and
// stops everything this command started. The exit code is the starter's.
//
//	go run ./cmd/ralph-local ["objective text"]
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	dir, err := os.Getwd()
	if err != nil {
		os.Stderr.WriteString("ralph-local: " + err.Error() + "\n")
		os.Exit(1)
	}
	l := &local{dir: dir, environ: os.Environ(), stdout: os.Stdout, stderr: os.Stderr, signals: signals}
	os.Exit(l.main(os.Args[1:]))
}
