// Command ralph-devserver runs a local Temporal dev server with Ralph's
// dynamic config until SIGINT/SIGTERM, for scripts:
//
//	go run ./cmd/ralph-devserver --port 7233 --ui-port 8233 --db-filename .ralph/temporal.db
//
// It prints TEMPORAL_ADDRESS=host:port on stdout once the server is healthy.
// With -install-only it only installs the pinned temporal CLI into Ralph's
// cache when it is missing and prints its path.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
)

func main() {
	var opts temporalserver.DevOptions
	flag.IntVar(&opts.Port, "port", 7233, "frontend gRPC port (0: a free one)")
	flag.IntVar(&opts.UIPort, "ui-port", 0, "web UI port (0: headless)")
	flag.StringVar(&opts.DBFile, "db-filename", "", "SQLite file that keeps state across restarts (default: in memory)")
	flag.StringVar(&opts.LogLevel, "log-level", "warn", "server log level")
	installOnly := flag.Bool("install-only", false, "only install the temporal CLI "+temporalserver.CLIVersion+" into Ralph's cache when it is missing, print its path and exit")
	flag.Parse()
	opts.Output = os.Stderr
	if *installOnly {
		bin, err := temporalserver.EnsureCLI(context.Background(), os.Stderr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ralph-devserver: %v\n", err)
			os.Exit(1)
		}
		fmt.Println(bin)
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Minute) // a cold go install is slow
	s, err := temporalserver.StartDev(startCtx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralph-devserver: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("TEMPORAL_ADDRESS=%s\n", s.Address)
	if s.UIAddress != "" {
		fmt.Fprintf(os.Stderr, "Temporal UI: http://%s\n", s.UIAddress)
	}
	<-ctx.Done()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "ralph-devserver: %v\n", err)
		os.Exit(1)
	}
}
