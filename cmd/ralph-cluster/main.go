// Command ralph-cluster runs a PostgreSQL-backed Temporal cluster on this
// machine (devenv/temporalserver): Debian's PostgreSQL 15 and the full Temporal
// server, with the namespace and Ralph's search attributes registered.
//
//	go run ./cmd/ralph-cluster                 # print export lines, serve until Ctrl-C
//	go run ./cmd/ralph-cluster -- CMD [ARGS]   # run CMD against it, then tear down
//	go run ./cmd/ralph-cluster -build-only     # only build and cache the server binaries
//
// Everything lives in one state directory that is removed at the end.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/ralph-temporal/ralph/devenv/temporalserver"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("ralph-cluster", flag.ContinueOnError)
	var opts temporalserver.ClusterOptions
	fs.StringVar(&opts.Namespace, "namespace", temporalserver.DefaultNamespace, "namespace to register")
	fs.StringVar(&opts.Dir, "dir", "", "state directory to create (absent or empty; default: a new temp dir)")
	fs.BoolVar(&opts.Keep, "keep", false, "keep the state directory at the end")
	fs.StringVar(&opts.LogLevel, "log-level", temporalserver.DefaultLogLevel, "Temporal server log level")
	fs.BoolVar(&opts.Durable, "durable", false, "keep PostgreSQL's fsync on")
	verbose := fs.Bool("v", false, "show the build's, PostgreSQL's and the server's output")
	buildOnly := fs.Bool("build-only", false, "only build and cache temporal-server and temporal-sql-tool, print their directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *verbose {
		opts.Output = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *buildOnly {
		cache := temporalserver.DefaultCacheDir()
		if _, err := temporalserver.EnsureServer(ctx, cache, os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "ralph-cluster: %v\n", err)
			return 1
		}
		fmt.Println(temporalserver.ServerBinDir(cache))
		return 0
	}
	s, err := temporalserver.StartCluster(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralph-cluster: %v\n", err)
		return 1
	}
	code := serve(ctx, s, fs.Args(), os.Stdout)
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "ralph-cluster: %v\n", err)
		return 1
	}
	return code
}

// serve prints where the cluster is and waits for a signal, or runs the
// command with the cluster's environment and returns its exit code.
func serve(ctx context.Context, s *temporalserver.Server, command []string, stdout io.Writer) int {
	env := append(s.Env(),
		"RALPH_CLUSTER_HTTP_ADDRESS="+s.HTTPAddress,
		"RALPH_CLUSTER_METRICS_ADDRESS="+s.MetricsAddress,
		"RALPH_CLUSTER_POSTGRES_URL="+s.PostgresURL)
	if len(command) == 0 {
		for _, kv := range env {
			fmt.Fprintf(stdout, "export %s\n", kv)
		}
		fmt.Fprintf(os.Stderr, "ralph-cluster: serving (state in %s); Ctrl-C or SIGTERM tears it down\n", s.Dir)
		<-ctx.Done()
		return 0
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "ralph-cluster: run %s: %v\n", command[0], err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// A Ctrl-C reaches the command through the terminal's process
		// group too; a SIGTERM sent to this process alone is passed on.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err = <-done
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintf(os.Stderr, "ralph-cluster: run %s: %v\n", command[0], err)
		return 1
	}
	return 0
}
