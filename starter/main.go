// Command starter starts and follows Ralph runs and controls open ones.
// Its commands, flags and exit codes are declared once in
// app/starterapp/commands.go: run `starter --help`, or read the generated
// docs/reference.md.
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
