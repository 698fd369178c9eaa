package testkit

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// Listener is a service on the host that a sandboxed command must (or
// must not) reach: it answers HTTP with "host-listener" and counts connections.
type Listener struct {
	Port  int
	conns atomic.Int64
	open  atomic.Int64
	max   atomic.Int64
}

// Listen starts a Listener on every address of the host, IPv4 and IPv6.
func Listen(t testing.TB) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{Port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "host-listener") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				l.conns.Add(1)
				n := l.open.Add(1)
				for m := l.max.Load(); n > m && !l.max.CompareAndSwap(m, n); m = l.max.Load() {
				}
			case http.StateClosed, http.StateHijacked:
				l.open.Add(-1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l
}

// Connections is how many connections reached the listener.
func (l *Listener) Connections() int { return int(l.conns.Load()) }

// MaxOpen is the most connections the listener held at once.
func (l *Listener) MaxOpen() int { return int(l.max.Load()) }

// Open is how many connections it holds now.
func (l *Listener) Open() int { return int(l.open.Load()) }
