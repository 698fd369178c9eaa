package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Record is one connection a command asked the proxy for: what the
// round's transcript shows.
type Record struct {
	// Method is CONNECT for a tunnel, else the HTTP method of a plain request.
	Method string `json:"method"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	// Allowed is true when the proxy dialed the destination.
	Allowed bool `json:"allowed"`
	// Rule names why it was refused (see the Rule* constants).
	Rule string `json:"rule,omitempty"`
	// Address is the resolved address dialed (or refused).
	Address string `json:"address,omitempty"`
	// Error is why an allowed destination could not be reached.
	Error string `json:"error,omitempty"`
	// Omitted, on the one record after MaxRecords, counts the connections
	// decided but not recorded.
	Omitted int `json:"omitted,omitempty"`
}

// Bounds of one command's proxy: it runs in the worker, outside the
// command's cgroup, so nothing a command does may make it grow.
const (
	// MaxConns is how many connections a command may hold at once; more
	// wait to be accepted.
	MaxConns = 256
	// MaxRecords is how many connections are recorded one by one.
	MaxRecords = 1000
)

// IdleTimeout closes a connection or tunnel that moved no byte for this long.
var IdleTimeout = 60 * time.Second

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialTimeout bounds resolving and dialing one destination.
const DialTimeout = 30 * time.Second

// Proxy serves one command's connections. Its zero value is not usable: use New.
type Proxy struct {
	allow    *AllowList
	resolver Resolver
	dialer   net.Dialer
	// dialTCP connects to a checked address: dialer.DialContext, or in
	// tests a route to a server standing in for a remote address.
	dialTCP func(ctx context.Context, network, address string) (net.Conn, error)

	mu      sync.Mutex
	records []Record
	omitted int
	conns   map[net.Conn]struct{}
	closed  bool
	srv     *http.Server
}

// New is a proxy that applies allow; a nil resolver uses the system's.
func New(allow *AllowList, resolver Resolver) *Proxy {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	p := &Proxy{allow: allow, resolver: resolver, conns: make(map[net.Conn]struct{})}
	p.dialer.Timeout = DialTimeout
	p.dialTCP = p.dialer.DialContext
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL = r.In.URL
			r.Out.Host = r.In.Host
		},
		// A fresh connection per request: every dial is decided and
		// recorded, and nothing is pooled past the command.
		Transport: &http.Transport{
			Proxy:              nil,
			DialContext:        p.dialHTTP,
			DisableKeepAlives:  true,
			DisableCompression: true,
		},
		ErrorHandler: p.httpError,
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serveHTTP(w, r, rp) }),
		ReadHeaderTimeout: DialTimeout,
		IdleTimeout:       IdleTimeout,
		ConnState:         p.track,
	}
	return p
}

// Serve answers on l until Close; it returns once l is closed.
func (p *Proxy) Serve(l net.Listener) { _ = p.srv.Serve(newBoundedListener(l, MaxConns)) }

// Close stops serving and ends every open connection and tunnel (the
// command they belonged to is over), then returns what was recorded.
func (p *Proxy) Close() []Record {
	_ = p.srv.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	return p.Records()
}

// Records is every connection decided so far, in order.
func (p *Proxy) Records() []Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]Record(nil), p.records...)
	if p.omitted > 0 {
		out = append(out, Record{Omitted: p.omitted})
	}
	return out
}

func (p *Proxy) record(r Record) {
	p.mu.Lock()
	if len(p.records) < MaxRecords {
		p.records = append(p.records, r)
	} else {
		p.omitted++
	}
	p.mu.Unlock()
}

// track remembers hijacked and open connections so Close can end them.
func (p *Proxy) track(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s {
	case http.StateNew, http.StateHijacked:
		if p.closed {
			c.Close()
			return
		}
		p.conns[c] = struct{}{}
	case http.StateClosed:
		delete(p.conns, c)
	}
}

func (p *Proxy) adopt(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) release(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// refusal is a destination the rules forbid.
type refusal struct {
	host string
	port int
	rule string
}

func (r *refusal) Error() string {
	return fmt.Sprintf("ralph sandbox proxy: %s refused: %s", net.JoinHostPort(r.host, strconv.Itoa(r.port)), r.rule)
}

// reason is the status line's reason phrase after "403 ": clients that
// print only the status line (the go command's module fetch, a CONNECT
// error in Go, pip's tunnel error) still show the rule and where it is
// set. It names what the client asked for, never the address a name
// resolved to.
func (r *refusal) reason() string {
	hp := printable(net.JoinHostPort(r.host, strconv.Itoa(r.port)))
	switch r.rule {
	case RuleNotAllowed:
		return "Forbidden by ralph sandbox: " + hp + " is not in RALPH_SANDBOX_ALLOW_HOSTS"
	case RuleThisHost:
		return "Forbidden by ralph sandbox: " + hp + " is at an address of the worker's own host; only RALPH_SANDBOX_ALLOW_HOSTS can allow it"
	}
	article := "a "
	if strings.ContainsRune("aeiou", rune(r.rule[0])) {
		article = "an "
	}
	return "Forbidden by ralph sandbox: " + hp + " is at " + article + r.rule + " address; only RALPH_SANDBOX_ALLOW_HOSTS can allow it"
}

// printable keeps a status line one line of printable ASCII, and short.
func printable(s string) string {
	const max = 120
	b := []byte(s)
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			b[i] = '?'
		}
	}
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

type recordKey struct{}

// dial resolves host itself, checks every address and dials the first
// permitted one: what is checked is exactly what is dialed.
func (p *Proxy) dial(ctx context.Context, method, host string, port int) (net.Conn, error) {
	rec := Record{Method: method, Host: host, Port: port}
	c, err := p.dialChecked(ctx, host, port, &rec)
	var ref *refusal
	switch {
	case errors.As(err, &ref):
		rec.Rule = ref.rule
	case err != nil:
		rec.Allowed, rec.Error = true, err.Error()
	default:
		rec.Allowed = true
	}
	p.record(rec)
	return c, err
}

func (p *Proxy) dialChecked(ctx context.Context, host string, port int, rec *Record) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		// The list is checked first, so an unlisted name is refused
		// without a lookup that could leak it.
		if !p.allow.Empty() && !p.allow.nameAllowed(host, port) && !p.allow.hasAddrs() {
			return nil, &refusal{host, port, RuleNotAllowed}
		}
		// The root's dot changes nothing but would keep /etc/hosts out.
		found, err := p.resolver.LookupNetIP(ctx, "ip", strings.TrimSuffix(host, "."))
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		for _, a := range found {
			addrs = append(addrs, a.Unmap())
		}
	}
	var firstRule string
	var lastErr error
	for _, a := range addrs {
		if rule := p.allow.Check(host, port, a); rule != "" {
			if firstRule == "" {
				firstRule, rec.Address = rule, a.String()
			}
			continue
		}
		rec.Address = a.String()
		c, err := p.dialTCP(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	if lastErr != nil {
		return nil, lastErr
	}
	if firstRule == "" {
		return nil, fmt.Errorf("resolving %s: no address", host)
	}
	return nil, &refusal{host, port, firstRule}
}

// hasAddrs reports whether the list has address entries: then a name must
// be resolved to know whether it leads to one.
func (l *AllowList) hasAddrs() bool {
	if l == nil {
		return false
	}
	for _, e := range l.entries {
		if e.addr.IsValid() {
			return true
		}
	}
	return false
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request, rp *httputil.ReverseProxy) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "ralph sandbox proxy: only absolute http:// URLs and CONNECT are served (https goes through CONNECT)", http.StatusBadRequest)
		return
	}
	r.Header.Del("Proxy-Connection")
	r.Header.Del("Proxy-Authorization")
	rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), recordKey{}, r.Method)))
}

// dialHTTP is the transport's dialer for plain requests.
func (p *Proxy) dialHTTP(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port, err := splitHostPort(addr, 80)
	if err != nil {
		return nil, err
	}
	method, _ := ctx.Value(recordKey{}).(string)
	if method == "" {
		method = "HTTP"
	}
	return p.dial(ctx, method, host, port)
}

func (p *Proxy) httpError(w http.ResponseWriter, r *http.Request, err error) {
	var ref *refusal
	if errors.As(err, &ref) {
		p.refuse(w, ref)
		return
	}
	http.Error(w, "ralph sandbox proxy: "+err.Error(), http.StatusBadGateway)
}

// refuse answers 403 with the rule in the reason phrase, the
// X-Ralph-Proxy-Rule header and the body. net/http writes only the
// standard reason phrase, so the answer is written on the hijacked
// connection, which is then closed.
func (p *Proxy) refuse(w http.ResponseWriter, ref *refusal) {
	body := ref.Error() + "\n"
	if hj, ok := w.(http.Hijacker); ok {
		if conn, buf, err := hj.Hijack(); err == nil {
			defer p.release(conn)
			fmt.Fprintf(buf, "HTTP/1.1 403 %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Ralph-Proxy-Rule: %s\r\n"+
				"Content-Length: %d\r\nConnection: close\r\n\r\n%s", ref.reason(), ref.rule, len(body), body)
			if buf.Flush() == nil {
				lingerRead(conn)
			}
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Ralph-Proxy-Rule", ref.rule)
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, body)
}

// lingerRead half-closes c and reads what the client still sends (a
// request body), briefly and boundedly: closing with unread bytes would
// reset the connection, and the client could lose the answer.
func lingerRead(c net.Conn) {
	closeWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// connect opens a tunnel: the destination is decided and dialed before the
// client hears 200, so a refusal is an ordinary 403 response.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host, 443)
	if err != nil {
		http.Error(w, "ralph sandbox proxy: CONNECT needs host:port: "+err.Error(), http.StatusBadRequest)
		return
	}
	up, err := p.dial(r.Context(), http.MethodConnect, host, port)
	if err != nil {
		p.httpError(w, r, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "ralph sandbox proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.adopt(up) {
		down.Close()
		return
	}
	defer p.release(up)
	defer p.release(down)
	up, down = idleConn{up}, idleConn{down}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the client sent after the CONNECT line are already buffered.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			if _, err := up.Write(b); err != nil {
				done <- struct{}{}
				return
			}
		}
		_, _ = io.Copy(up, down)
		closeWrite(up)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		closeWrite(down)
		done <- struct{}{}
	}()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// splitHostPort reads host[:port], defaulting the port.
func splitHostPort(hostport string, def int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return strings.Trim(hostport, "[]"), def, nil
		}
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", portText)
	}
	return host, port, nil
}
