package netproxy

import (
	"net"
	"sync"
	"time"
)

// boundedListener accepts at most n connections at once: Accept waits for
// one to close first.
type boundedListener struct {
	net.Listener
	slots chan struct{}
}

func newBoundedListener(l net.Listener, n int) net.Listener {
	return &boundedListener{Listener: l, slots: make(chan struct{}, n)}
}

func (l *boundedListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
}

// slotConn gives its slot back once, when closed.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// idleConn is one side of a tunnel: every read and write first moves its
// deadline IdleTimeout ahead, so a tunnel that moves nothing is closed.
type idleConn struct{ net.Conn }

func (c idleConn) Read(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(IdleTimeout))
	return c.Conn.Read(b)
}

func (c idleConn) Write(b []byte) (int, error) {
	_ = c.Conn.SetDeadline(time.Now().Add(IdleTimeout))
	return c.Conn.Write(b)
}

func (c idleConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
