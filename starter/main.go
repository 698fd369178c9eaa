// Command starter starts and follows Ralph runs: `starter run` (foreground,
// round-by-round progress, Ctrl-C cancels), `starter start` (background),
// and `starter status|cancel|result` for an existing run. It connects with
// the standard TEMPORAL_* environment. Run `starter --help` for details.
//
// Exit codes: 0 complete, 3 blocked, 4 budget-limited, 1 failed, 130
// cancelled, 2 bad usage.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/starterapp"
)

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	app := &starterapp.App{
		Env:     config.OSEnv,
		Stdin:   os.Stdin,
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
		Signals: signals,
	}
	os.Exit(app.Main(os.Args[1:]))
}
