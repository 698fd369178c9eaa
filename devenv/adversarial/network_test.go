package adversarial

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// curlCode asks for url through the proxy (whatever NO_PROXY says),
// plainly and as a CONNECT tunnel, and prints the HTTP status of each.
func curlCode(url string) string {
	return fmt.Sprintf(`curl --noproxy '' -s -m 10 -o /dev/null -w 'plain:%%{url}=%%{http_code}\n' %q; curl --noproxy '' -s -m 10 -p -o /dev/null -w 'tunnel:%%{url}=%%{http_connect}\n' %q`, url, url)
}

// hostAddrs are the addresses of the worker host's interfaces.
func hostAddrs(t *testing.T) []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && !ip.IsLinkLocalUnicast() {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// Finding 4: the proxy reached the host's own addresses when they were
// not RFC 1918, and the IANA special-purpose ranges were unclassified.
func TestProxyRefusesThisHostAndSpecialPurposeRanges(t *testing.T) {
	j := New(t)
	l := testkit.Listen(t)
	port := strconv.Itoa(l.Port)
	var script []string
	for _, a := range hostAddrs(t) {
		host := a.String()
		if a.Is6() {
			host = "[" + host + "]"
		}
		script = append(script, curlCode("http://"+host+":"+port+"/"))
		if a.Is4() {
			script = append(script, curlCode("http://[::ffff:"+a.String()+"]:"+port+"/"))
		}
	}
	for _, host := range []string{"192.0.0.9", "192.0.2.2", "198.18.0.1", "198.51.100.7", "203.0.113.5", "240.0.0.1",
		"[64:ff9b::c000:202]", "[2002:c000:0202::1]", "[::c000:202]", "[2001:db8::1]", "[64:ff9b::7f00:1]"} {
		script = append(script, curlCode("http://"+host+":"+port+"/"))
	}
	res := j.Run(strings.Join(script, "\n"))
	for _, line := range strings.Fields(res.Output) {
		if !strings.HasSuffix(line, "=403") {
			t.Errorf("not refused (want 403): %s\n%s", line, res.Output)
		}
	}
	if len(res.Network) == 0 {
		t.Fatalf("no connection was recorded:\n%s", res.Output)
	}
	if n := l.Connections(); n != 0 {
		t.Errorf("the host's listener saw %d connections", n)
	}
}

// Finding 10: an allowlisted loopback destination (an internal mirror on
// the host's loopback) must work with the environment as the worker sets it.
func TestAllowlistedLoopbackWorksWithTheCommandEnvironment(t *testing.T) {
	l := testkit.Listen(t)
	dest := "127.0.0.1:" + strconv.Itoa(l.Port)
	j := New(t, func(c *sandbox.Config) { c.AllowHosts = []string{dest} })
	res := j.Run("curl -sS -m 10 http://" + dest + "/x; echo; curl -sS -m 10 http://localhost:" + strconv.Itoa(l.Port) + "/y")
	if strings.Count(res.Output, "host-listener") != 2 {
		t.Errorf("the allowlisted mirror was not reached:\n%s", res.Output)
	}
}

// Finding 5: refused requests piled up records without bound.
func TestProxyRecordsAreBounded(t *testing.T) {
	j := New(t)
	n := netproxy.MaxRecords + 50
	res := j.Run(`python3 -c '
import socket
req = b"GET http://10.9.9.9/ HTTP/1.1\r\nHost: 10.9.9.9\r\n\r\n"
for i in range(` + strconv.Itoa(n) + `):
    # A refusal closes its connection (its reason phrase names the rule,
    # which net/http cannot write), so each request opens its own.
    s = socket.create_connection(("127.0.0.1", 3128))
    f = s.makefile("rb")
    s.sendall(req)
    while True:
        line = f.readline()
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        if line in (b"\r\n", b""):
            break
    f.read(length)
    s.close()
print("done")
'`)
	if !strings.Contains(res.Output, "done") {
		t.Fatalf("the requests did not go through:\n%s", res.Output)
	}
	if len(res.Network) != netproxy.MaxRecords+1 || res.Network[netproxy.MaxRecords].Omitted != 50 {
		t.Errorf("got %d records (last %+v), want %d and one counting 50 more", len(res.Network), res.Network[len(res.Network)-1], netproxy.MaxRecords)
	}
}

// Finding 5: a command held thousands of proxy connections open, idle,
// against the worker's descriptor limit. The tunnels are held, not idle
// (IdleTimeout is long here), so a slow machine cannot free slots early.
// The host listener is read while the command still holds them: once it
// exits, the proxy takes the connections that waited and the listener may
// see those before it sees the held ones close.
func TestProxyConnectionsAreBounded(t *testing.T) {
	l := testkit.Listen(t)
	dest := "127.0.0.1:" + strconv.Itoa(l.Port)
	j := New(t, func(c *sandbox.Config) { c.AllowHosts = []string{dest} })
	held := make(chan int, 1)
	go func() {
		for t.Context().Err() == nil {
			if _, err := os.Stat(filepath.Join(j.Dir, "counted")); err == nil {
				held <- l.MaxOpen()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := j.Run(`python3 -c '
import socket, select, time
held = []
for i in range(300):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT ` + dest + ` HTTP/1.1\r\nHost: ` + dest + `\r\n\r\n")
    held.append(s)
up, answered = 0, set()
deadline, last = time.time() + 60, time.time()
while time.time() < deadline and time.time() - last < 3:
    ready, _, _ = select.select([s for s in held if s not in answered], [], [], 0.2)
    for s in ready:
        answered.add(s)
        last = time.time()
        if s.recv(100).startswith(b"HTTP/1.1 200"):
            up += 1
print("tunnels", up)
open("counted", "w").close()
time.sleep(2)
'`)
	if want := fmt.Sprintf("tunnels %d\n", netproxy.MaxConns); !strings.Contains(res.Output, want) {
		t.Errorf("want %q: at most %d connections at once:\n%s", want, netproxy.MaxConns, res.Output)
	}
	select {
	case got := <-held:
		if got != netproxy.MaxConns {
			t.Errorf("the host listener held %d tunnels at once, want %d", got, netproxy.MaxConns)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the command never wrote counted:\n%s", res.Output)
	}
}

// Finding 5, the other half: a tunnel that moves nothing is closed, so
// idle tunnels cannot hold slots.
func TestProxyClosesIdleTunnels(t *testing.T) {
	l := testkit.Listen(t)
	dest := "127.0.0.1:" + strconv.Itoa(l.Port)
	old := netproxy.IdleTimeout
	netproxy.IdleTimeout = 2 * time.Second
	t.Cleanup(func() { netproxy.IdleTimeout = old })
	j := New(t, func(c *sandbox.Config) { c.AllowHosts = []string{dest} })
	res := j.Run(`python3 -c '
import socket
held = []
for i in range(10):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.settimeout(30)
    s.sendall(b"CONNECT ` + dest + ` HTTP/1.1\r\nHost: ` + dest + `\r\n\r\n")
    if s.recv(100).startswith(b"HTTP/1.1 200"):
        held.append(s)
print("tunnels", len(held))
closed = 0
for s in held:
    try:
        if s.recv(100) == b"":
            closed += 1
    except OSError:
        pass
print("idle-closed", closed)
'`)
	if !strings.Contains(res.Output, "tunnels 10\n") || !strings.Contains(res.Output, "idle-closed 10\n") {
		t.Errorf("want 10 tunnels, all closed when idle:\n%s", res.Output)
	}
}
