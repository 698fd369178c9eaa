// Command ralph-codec-server decrypts Ralph's payloads for the Temporal UI
// and CLI: go run ./cmd/ralph-codec-server --listen ADDR --origins URL,...
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ralph-temporal/ralph/app/codecserver"
	"github.com/ralph-temporal/ralph/app/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := codecserver.Main(ctx, os.Args[1:], config.OSEnv, os.Stderr)
	stop()
	os.Exit(code)
}
