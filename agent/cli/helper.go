package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The worker's binary runs in two helper modes inside the sandbox, as the
// CLI's uid (a link to it lies in the attempt's home, the only path of the
// worker's the sandbox shows):
//   - report mode: the MCP server of the report tool (report.go);
//   - gateway mode: the parent of the CLI, listening on the sandbox's
//     loopback and passing every connection to the worker's gateway socket;
//     the CLI's command line and environment get the address in place of
//     gatewayMark.
const (
	reportArg  = "__ralph-agent-report"
	gatewayArg = "__ralph-agent-gateway"
	// gatewayMark stands for the gateway's base URL (ending in /v1) in the
	// CLI's argv and env, gatewayRootMark for it without /v1.
	gatewayMark     = "{{ralph-gateway}}"
	gatewayRootMark = "{{ralph-gateway-root}}"
)

// gatewayRoot is the gateway's URL without /v1 (Anthropic clients add it).
func gatewayRoot(base string) string {
	if base == gatewayMark {
		return gatewayRootMark
	}
	return strings.TrimSuffix(base, "/v1")
}

// substitute puts the gateway's address in place of the marks.
func substitute(s, root string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, gatewayRootMark, root), gatewayMark, root+"/v1")
}

func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case reportArg:
		os.Exit(reportMain(os.Args[2:]))
	case gatewayArg:
		os.Exit(gatewayMain(os.Args[2:]))
	}
}

func reportMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "ralph report server: usage: "+reportArg+" <socket>")
		return 2
	}
	if err := serveReportMCP(context.Background(), args[0], &mcp.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "ralph report server:", err)
		return 1
	}
	return 0
}

// gatewayMain: args are <socket> <argv...>. It exits with the CLI's status.
func gatewayMain(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "ralph gateway link:", err)
		return 126
	}
	if len(args) < 2 {
		return fail(errors.New("usage: " + gatewayArg + " <socket> <command...>"))
	}
	socket := args[0]
	ln, err := net.Listen("tcp4", net.JoinHostPort(directLoopback(os.Getenv("NO_PROXY")), "0"))
	if err != nil {
		return fail(err)
	}
	go forward(ln, socket)
	root := "http://" + ln.Addr().String()
	argv := make([]string, len(args)-1)
	for i, a := range args[1:] {
		argv[i] = substitute(a, root)
	}
	env := os.Environ()
	for i, kv := range env {
		env[i] = substitute(kv, root)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// forward passes each connection on ln to the unix socket.
func forward(ln net.Listener, socket string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := dialUnix(socket)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(up, c)
				if u, ok := up.(*net.UnixConn); ok {
					_ = u.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, up)
			<-done
		}()
	}
}

// directLoopback is the first IPv4 loopback address NO_PROXY lists, so
// the CLI reaches the gateway without the proxy: the sandbox puts one there
// even when RALPH_SANDBOX_ALLOW_HOSTS sends 127.0.0.1 to the proxy (a
// mirror on the host's loopback). Without a proxy it is 127.0.0.1.
func directLoopback(noProxy string) string {
	for _, e := range strings.Split(noProxy, ",") {
		if a, err := netip.ParseAddr(strings.TrimSpace(e)); err == nil && a.Is4() && a.IsLoopback() {
			return a.String()
		}
	}
	return "127.0.0.1"
}
