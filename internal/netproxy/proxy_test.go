package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1": RuleLoopback, "127.9.9.9": RuleLoopback, "::1": RuleLoopback, "::ffff:127.0.0.1": RuleLoopback,
		"10.1.2.3": RulePrivate, "172.16.0.1": RulePrivate, "172.31.255.255": RulePrivate, "192.168.1.1": RulePrivate,
		"100.64.0.1": RulePrivate, "100.127.255.254": RulePrivate, "fc00::1": RulePrivate, "fd12:3456::1": RulePrivate,
		"::ffff:10.0.0.1": RulePrivate,
		"169.254.169.254": RuleLinkLocal, "fe80::1": RuleLinkLocal,
		"224.0.0.1": RuleMulticast, "239.255.255.250": RuleMulticast, "ff02::1": RuleMulticast, "ff0e::1": RuleMulticast,
		"255.255.255.255": RuleMulticast,
		"0.0.0.0":         RuleUnspecified, "0.1.2.3": RuleUnspecified, "::": RuleUnspecified,
		"93.184.216.34": "", "172.32.0.1": "", "100.128.0.1": "", "2606:4700::1111": "", "8.8.8.8": "",
	}
	for addr, want := range cases {
		if got := Classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestAllowListForms(t *testing.T) {
	l, err := ParseAllowList([]string{"proxy.golang.org", "*.npmjs.org", "mirror.internal:8443", "10.0.0.5", "127.0.0.1:3000", "[fd00::7]:81", "FD00::8"})
	if err != nil {
		t.Fatal(err)
	}
	pub := netip.MustParseAddr("93.184.216.34")
	cases := []struct {
		host string
		port int
		addr string
		want string
	}{
		{"proxy.golang.org", 443, "93.184.216.34", ""},
		{"PROXY.golang.org.", 80, "93.184.216.34", ""},
		{"sum.golang.org", 443, "93.184.216.34", RuleNotAllowed},
		{"registry.npmjs.org", 443, "93.184.216.34", ""},
		{"a.b.npmjs.org", 443, "93.184.216.34", ""},
		{"npmjs.org", 443, "93.184.216.34", RuleNotAllowed}, // *.domain: subdomains only
		{"evilnpmjs.org", 443, "93.184.216.34", RuleNotAllowed},
		{"mirror.internal", 8443, "10.9.9.9", ""}, // a listed name may be private
		{"mirror.internal", 443, "10.9.9.9", RuleNotAllowed},
		{"anything", 22, "10.0.0.5", ""}, // an address entry covers every port
		{"x", 3000, "127.0.0.1", ""},
		{"x", 3001, "127.0.0.1", RuleNotAllowed},
		{"x", 81, "fd00::7", ""},
		{"x", 82, "fd00::7", RuleNotAllowed},
		{"x", 1, "fd00::8", ""},
		{"x", 80, "169.254.169.254", RuleNotAllowed},
	}
	for _, c := range cases {
		if got := l.Check(c.host, c.port, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Check(%s:%d -> %s) = %q, want %q", c.host, c.port, c.addr, got, c.want)
		}
	}
	if got := (*AllowList)(nil).Check("example.com", 443, pub); got != "" {
		t.Errorf("no list: a public address is refused: %q", got)
	}
	if got := l.String(); got != "proxy.golang.org,*.npmjs.org,mirror.internal:8443,10.0.0.5,127.0.0.1:3000,[fd00::7]:81,fd00::8" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"host:0", "host:99999", "host:x", "bad host", "*.", "a..b", "[::1", "http://x"} {
		if _, err := ParseAllowList([]string{bad}); err == nil || !strings.Contains(err.Error(), "RALPH_SANDBOX_ALLOW_HOSTS") {
			t.Errorf("ParseAllowList(%q) = %v, want an error naming the setting", bad, err)
		}
	}
}

// staticResolver answers from a map, so tests can make any name lead anywhere.
type staticResolver map[string][]string

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range r[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no such host %s", host)
	}
	return out, nil
}

// startProxy serves a proxy on a loopback port and returns a client that uses it.
func startProxy(t *testing.T, allow []string, res Resolver) (*Proxy, *http.Client, string) {
	t.Helper()
	l, err := ParseAllowList(allow)
	if err != nil {
		t.Fatal(err)
	}
	return serveProxy(t, New(l, res))
}

// serveProxy serves p on a loopback port and returns a client that uses it.
func serveProxy(t *testing.T, p *Proxy) (*Proxy, *http.Client, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	u := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(tr.CloseIdleConnections)
	return p, &http.Client{Transport: tr}, ln.Addr().String()
}

func port(t *testing.T, rawURL string) int {
	u, _ := url.Parse(rawURL)
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyRefusesByDefault(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") }))
	defer target.Close()
	tport := port(t, target.URL)
	res := staticResolver{"rebind.example": {"127.0.0.1"}, "meta.example": {"169.254.169.254"}, "lan.example": {"192.168.0.10"},
		"v6.example": {"::1"}, "mc.example": {"224.0.0.251"}, "zero.example": {"0.0.0.0"}}
	p, c, _ := startProxy(t, nil, res)
	cases := []struct{ host, rule string }{
		{"127.0.0.1", RuleLoopback}, {"rebind.example", RuleLoopback}, {"[::1]", RuleLoopback}, {"v6.example", RuleLoopback},
		{"meta.example", RuleLinkLocal}, {"lan.example", RulePrivate}, {"mc.example", RuleMulticast}, {"zero.example", RuleUnspecified},
	}
	for _, cs := range cases {
		for _, scheme := range []string{"http", "https"} { // plain request, CONNECT
			u := fmt.Sprintf("%s://%s:%d/", scheme, cs.host, tport)
			code, body := get(t, c, u)
			if scheme == "http" && (code != http.StatusForbidden || !strings.Contains(body, cs.rule) || strings.Contains(body, "secret")) {
				t.Errorf("GET %s: %d %q, want 403 naming %q", u, code, body, cs.rule)
			}
			// Go's client prints a refused tunnel's reason phrase alone.
			if scheme == "https" && (code != 0 || !strings.Contains(body, "Forbidden by ralph sandbox: ") || !strings.Contains(body, " "+cs.rule+" address")) {
				t.Errorf("CONNECT %s: %d %q, want the tunnel refused naming %q", u, code, body, cs.rule)
			}
		}
	}
	recs := p.Records()
	if len(recs) != 2*len(cases) {
		t.Fatalf("records = %d, want %d: %+v", len(recs), 2*len(cases), recs)
	}
	for i, r := range recs {
		cs := cases[i/2]
		wantMethod := []string{"GET", "CONNECT"}[i%2]
		if r.Allowed || r.Rule != cs.rule || r.Method != wantMethod || r.Port != tport || r.Host != strings.Trim(cs.host, "[]") {
			t.Errorf("record %d = %+v, want %s %s refused by %q", i, r, wantMethod, cs.host, cs.rule)
		}
	}
}

func TestProxyConnectRefusalBody(t *testing.T) {
	_, _, addr := startProxy(t, nil, staticResolver{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "169.254.169.254:80 refused: link-local") {
		t.Fatalf("CONNECT metadata: %d %q", resp.StatusCode, b)
	}
}

func TestProxyAllowListed(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain "+r.URL.Path+" via "+r.Host)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls "+r.URL.Path) }))
	defer secure.Close()
	pp, sp := port(t, plain.URL), port(t, secure.URL)
	res := staticResolver{"mirror.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}}
	p, c, _ := startProxy(t, []string{"mirror.test:" + strconv.Itoa(pp), "127.0.0.1:" + strconv.Itoa(sp)}, res)

	if code, body := get(t, c, fmt.Sprintf("http://mirror.test:%d/a", pp)); code != 200 || body != fmt.Sprintf("plain /a via mirror.test:%d", pp) {
		t.Errorf("listed name, plain: %d %q", code, body)
	}
	if code, body := get(t, c, fmt.Sprintf("https://127.0.0.1:%d/b", sp)); code != 200 || body != "tls /b" {
		t.Errorf("listed address, CONNECT: %d %q", code, body)
	}
	if code, body := get(t, c, fmt.Sprintf("https://other.test:%d/c", sp)); code != 200 || body != "tls /c" {
		t.Errorf("a name resolving to a listed address, CONNECT: %d %q", code, body)
	}
	if code, body := get(t, c, fmt.Sprintf("http://other.test:%d/", pp)); code != 403 || !strings.Contains(body, RuleNotAllowed) {
		t.Errorf("unlisted: %d %q, want 403 %q", code, body, RuleNotAllowed)
	}
	if code, body := get(t, c, fmt.Sprintf("http://127.0.0.1:%d/", pp)); code != 403 || !strings.Contains(body, RuleNotAllowed) {
		t.Errorf("listed address on another port: %d %q", code, body)
	}
	want := []Record{
		{Method: "GET", Host: "mirror.test", Port: pp, Allowed: true, Address: "127.0.0.1"},
		{Method: "CONNECT", Host: "127.0.0.1", Port: sp, Allowed: true, Address: "127.0.0.1"},
		{Method: "CONNECT", Host: "other.test", Port: sp, Allowed: true, Address: "127.0.0.1"},
		{Method: "GET", Host: "other.test", Port: pp, Rule: RuleNotAllowed, Address: "127.0.0.1"},
		{Method: "GET", Host: "127.0.0.1", Port: pp, Rule: RuleNotAllowed, Address: "127.0.0.1"},
	}
	got := p.Records()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records:\n got %+v\nwant %+v", got, want)
	}
}

func TestProxyUnreachableAndUnresolvable(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p, c, _ := startProxy(t, []string{"127.0.0.1", "nowhere.test"}, staticResolver{})
	if code, _ := get(t, c, fmt.Sprintf("http://127.0.0.1:%d/", closedPort)); code != http.StatusBadGateway {
		t.Errorf("closed port: %d, want 502", code)
	}
	if code, _ := get(t, c, "http://nowhere.test/"); code != http.StatusBadGateway {
		t.Errorf("unresolvable: %d, want 502", code)
	}
	recs := p.Records()
	if len(recs) != 2 || !recs[0].Allowed || recs[0].Error == "" || !strings.Contains(recs[1].Error, "resolving nowhere.test") {
		t.Errorf("records = %+v", recs)
	}
}

func TestProxyCloseEndsTunnels(t *testing.T) {
	echo, _ := net.Listen("tcp", "127.0.0.1:0")
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	p, _, addr := startProxy(t, []string{"127.0.0.1"}, nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\nhello", echo.Addr())
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("tunnel echo: %q %v", buf, err)
	}
	p.Close()
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}

// An allowlisted loopback mirror sends 127.0.0.1 to the proxy; NO_PROXY
// then names another loopback address that no entry names, for the
// worker's services inside the sandbox.
func TestEnvKeepsOneLoopbackAddressDirect(t *testing.T) {
	proxy := []string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128"}
	for _, c := range []struct {
		allow []string
		want  string
	}{
		{nil, "localhost,127.0.0.1,::1"},
		{[]string{"example.com"}, "localhost,127.0.0.1,::1"},
		{[]string{"127.0.0.1:8080"}, "::1,127.0.0.2"},
		{[]string{"127.0.0.1", "127.0.0.2:3000", "[::1]:9"}, "127.0.0.3"},
	} {
		l, err := ParseAllowList(c.allow)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]string{}, proxy...), "NO_PROXY="+c.want, "no_proxy="+c.want)
		if got := Env(l); !slices.Equal(got, want) {
			t.Errorf("Env(%q) = %q, want %q", c.allow, got, want)
		}
	}
}
