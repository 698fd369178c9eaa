package temporalserver

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ralph-temporal/ralph/internal/wait"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PortFree reports whether addr (host:port) can be listened on now.
func PortFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// WaitPortFree waits up to within for addr to be released (a server that
// has just exited may hold it a moment longer); a port still taken then
// shows as the server's own error when it starts.
func WaitPortFree(addr string, within time.Duration) {
	_ = wait.For(context.Background(), within, 100*time.Millisecond, func(context.Context) error {
		if PortFree(addr) {
			return nil
		}
		return fmt.Errorf("%s is in use", addr)
	})
}
