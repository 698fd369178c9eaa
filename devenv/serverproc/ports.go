package serverproc

import (
	"fmt"
	"net"
	"time"
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
// has just exited may hold it a moment longer).
func WaitPortFree(addr string, within time.Duration) {
	deadline := time.Now().Add(within)
	for !PortFree(addr) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}
