package netproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func mirrorList(ms []Mirror) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String() + "<" + m.From
	}
	return strings.Join(parts, " ")
}

func TestMirrorsFromEnvironment(t *testing.T) {
	defaults := "proxy.golang.org:443<GOPROXY default sum.golang.org:443<GOSUMDB default registry.npmjs.org:443<npm_config_registry default " +
		"pypi.org:443<PIP_INDEX_URL default files.pythonhosted.org:443<PIP_INDEX_URL default"
	cases := []struct {
		name    string
		environ []string
		want    string
	}{
		{"nothing set: the toolchains' public defaults", nil, defaults},
		{"empty counts as unset", []string{"GOPROXY=", "PIP_INDEX_URL="}, defaults},
		{"every variable", []string{
			"GOPROXY=https://ci:hunter2@Athens.Corp.:3000/go|proxy.internal,direct,https://after.direct",
			"GOSUMDB=sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8 https://sumdb.corp/x",
			"npm_config_registry=http://10.1.2.3:4873/", "NPM_CONFIG_REGISTRY=https://npm.corp/",
			"YARN_NPM_REGISTRY_SERVER=https://yarn.corp",
			"PIP_INDEX_URL=https://pypi.corp/simple", "PIP_EXTRA_INDEX_URL=https://a.corp/simple /opt/wheels  https://[fd00::7]:8443/simple",
			"UV_DEFAULT_INDEX=https://pypi.corp/simple", "UV_INDEX=internal=https://uv.corp/simple https://uv2.corp",
			"UV_EXTRA_INDEX_URL=file:///srv/wheels",
			"CARGO_REGISTRIES_ZED_INDEX=sparse+https://cargo.corp/index/", "CARGO_REGISTRIES_ALPHA_INDEX=ssh://git@git.corp/index.git",
			"CARGO_REGISTRIES_ALPHA_TOKEN=https://not.a.registry",
		}, "athens.corp:3000<GOPROXY proxy.internal:443<GOPROXY sumdb.corp:443<GOSUMDB 10.1.2.3:4873<npm_config_registry " +
			"npm.corp:443<NPM_CONFIG_REGISTRY yarn.corp:443<YARN_NPM_REGISTRY_SERVER pypi.corp:443<PIP_INDEX_URL " +
			"a.corp:443<PIP_EXTRA_INDEX_URL [fd00::7]:8443<PIP_EXTRA_INDEX_URL uv.corp:443<UV_INDEX uv2.corp:443<UV_INDEX " +
			"cargo.corp:443<CARGO_REGISTRIES_ZED_INDEX"},
		{"off and direct name nothing, and no default replaces them",
			[]string{"GOPROXY=off", "GOSUMDB=off", "NPM_CONFIG_REGISTRY=https://npm.corp", "PIP_INDEX_URL=/srv/simple", "UV_INDEX_URL=https://uv.corp"},
			"npm.corp:443<NPM_CONFIG_REGISTRY uv.corp:443<UV_INDEX_URL"},
		{"GOSUMDB without a URL is https://name; GOPROXY direct alone",
			[]string{"GOPROXY=direct", "GOSUMDB=sum.corp.example+abc", "npm_config_registry=https://registry.npmjs.org", "PIP_INDEX_URL=https://pypi.org/simple", "UV_DEFAULT_INDEX=https://pypi.org/simple"},
			"sum.corp.example:443<GOSUMDB registry.npmjs.org:443<npm_config_registry pypi.org:443<PIP_INDEX_URL"},
	}
	for _, c := range cases {
		got, problems := Mirrors(c.environ)
		if mirrorList(got) != c.want || len(problems) != 0 {
			t.Errorf("%s:\n got %s %q\nwant %s", c.name, mirrorList(got), problems, c.want)
		}
	}

	// A value that means to name a registry but cannot is a problem named
	// by its variable, without the value (it may hold a password).
	got, problems := Mirrors([]string{"GOPROXY=https://ci:s3cret@/x", "PIP_INDEX_URL=https://ci:s3cret@pypi.corp:99999/simple",
		"npm_config_registry=http://bad host/", "GOSUMDB=off"})
	if mirrorList(got) != "pypi.org:443<UV_DEFAULT_INDEX default files.pythonhosted.org:443<UV_DEFAULT_INDEX default" || len(problems) != 3 {
		t.Fatalf("bad values: mirrors %s, problems %q", mirrorList(got), problems)
	}
	for i, v := range []string{"GOPROXY", "npm_config_registry", "PIP_INDEX_URL"} {
		if !strings.HasPrefix(problems[i], v+": not an http(s) URL") || strings.Contains(problems[i], "s3cret") {
			t.Errorf("problem %d = %q, want one naming %s without the value", i, problems[i], v)
		}
	}
}

func TestCheckWithMirrors(t *testing.T) {
	mirrors, _ := Mirrors([]string{"GOPROXY=https://goproxy.corp", "npm_config_registry=http://10.1.2.3:4873", "PIP_INDEX_URL=https://[FD00::7]:8443/simple"})
	l := (*AllowList)(nil).WithMirrors(mirrors)
	cases := []struct {
		host string
		port int
		addr string
		want string
	}{
		{"goproxy.corp", 443, "203.0.113.80", ""}, // special-purpose
		{"GOPROXY.corp.", 443, "10.0.0.9", ""},    // private
		{"goproxy.corp", 443, "93.184.216.34", ""},
		{"goproxy.corp", 80, "203.0.113.80", RuleSpecial}, // only its port
		{"other.corp", 443, "203.0.113.80", RuleSpecial},  // only its name
		{"203.0.113.80", 443, "203.0.113.80", RuleSpecial},
		{"goproxy.corp", 443, "127.0.0.1", RuleLoopback}, // never loopback or cloud metadata
		{"goproxy.corp", 443, "169.254.169.254", RuleLinkLocal},
		{"goproxy.corp", 443, "224.0.0.1", RuleMulticast},
		{"10.1.2.3", 4873, "10.1.2.3", ""},
		{"10.1.2.3", 4874, "10.1.2.3", RulePrivate},
		{"fd00:0::7", 8443, "fd00::7", ""},
	}
	for _, c := range cases {
		if got := l.Check(c.host, c.port, netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Check(%s:%d -> %s) = %q, want %q", c.host, c.port, c.addr, got, c.want)
		}
	}
	if got := (*AllowList)(nil).Check("goproxy.corp", 443, netip.MustParseAddr("203.0.113.80")); got != RuleSpecial {
		t.Errorf("no list, no mirrors: %q, want %q", got, RuleSpecial)
	}
	// A mirror that leads to one of this host's own addresses is refused:
	// that is a service of the worker's host, not a mirror elsewhere.
	addrs, err := net.InterfaceAddrs()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("interface addresses: %v %v", addrs, err)
	}
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.(*net.IPNet).IP)
		if got := l.Check("goproxy.corp", 443, ip.Unmap()); got == "" {
			t.Errorf("a mirror at this host's %s was allowed", ip)
		}
	}
	// RALPH_SANDBOX_ALLOW_HOSTS, when set, decides alone.
	listed, err := ParseAllowList([]string{"example.org"})
	if err != nil {
		t.Fatal(err)
	}
	listed = listed.WithMirrors(mirrors)
	if got := listed.Check("goproxy.corp", 443, netip.MustParseAddr("93.184.216.34")); got != RuleNotAllowed || listed.Mirrors() != nil {
		t.Errorf("with a list, a mirror: %q (mirrors %v), want %q and none", got, listed.Mirrors(), RuleNotAllowed)
	}
	if got := mirrorList(l.Mirrors()); got != "goproxy.corp:443<GOPROXY sum.golang.org:443<GOSUMDB default "+
		"10.1.2.3:4873<npm_config_registry [fd00::7]:8443<PIP_INDEX_URL pypi.org:443<UV_DEFAULT_INDEX default files.pythonhosted.org:443<UV_DEFAULT_INDEX default" {
		t.Errorf("Mirrors() = %s", got)
	}
}

// routeDialer stands in for the network: the proxy's dials to from reach
// the local server at to, and every address dialed is remembered.
type routeDialer struct {
	mu     sync.Mutex
	routes map[string]string
	dialed []string
}

func (d *routeDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	to, ok := d.routes[addr]
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no route to %s in this test", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

// The incident: the Go module proxy (here an internal one named by
// GOPROXY) resolves to 203.0.113.80, a special-purpose address. Through
// the proxy a Go client fetches from it, over plain HTTP and CONNECT; the
// same address under another name is refused, and what the client sees of
// the refusal, the status line alone, names the rule.
func TestProxyReachesMirrorAtSpecialPurposeAddress(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "module list "+r.URL.Path+" via "+r.Host)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls "+r.URL.Path) }))
	defer secure.Close()
	pp, sp := port(t, plain.URL), port(t, secure.URL)
	ps, ss := strconv.Itoa(pp), strconv.Itoa(sp)

	mirrors, problems := Mirrors([]string{"GOPROXY=http://goproxy.corp:" + ps + ",https://goproxy.corp:" + ss + ",direct",
		"npm_config_registry=http://npm.corp:" + ps, "PIP_INDEX_URL=http://pypi.corp:" + ps})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	res := staticResolver{"goproxy.corp": {"203.0.113.80"}, "other.corp": {"203.0.113.80"}, "npm.corp": {"10.9.8.7"}, "pypi.corp": {"127.0.0.1"}}
	routes := &routeDialer{routes: map[string]string{
		"203.0.113.80:" + ps: plain.Listener.Addr().String(), "203.0.113.80:" + ss: secure.Listener.Addr().String(),
		"10.9.8.7:" + ps: plain.Listener.Addr().String(),
	}}
	p := New((*AllowList)(nil).WithMirrors(mirrors), res)
	p.dialTCP = routes.dial
	_, c, _ := serveProxy(t, p)
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}

	for u, want := range map[string]string{
		"http://goproxy.corp:" + ps + "/github.com/go-chi/chi/v5/@v/list": "module list /github.com/go-chi/chi/v5/@v/list via goproxy.corp:" + ps,
		"https://goproxy.corp:" + ss + "/sumdb/sum.golang.org/supported":  "tls /sumdb/sum.golang.org/supported",
		"http://npm.corp:" + ps + "/left-pad":                             "module list /left-pad via npm.corp:" + ps,
	} {
		if code, body := get(t, c, u); code != 200 || body != want {
			t.Errorf("GET %s: %d %q, want 200 %q", u, code, body, want)
		}
	}

	special := func(hp string) string {
		return "403 Forbidden by ralph sandbox: " + hp + " is at a special-purpose address; only RALPH_SANDBOX_ALLOW_HOSTS can allow it"
	}
	for u, status := range map[string]string{
		"http://other.corp:" + ps + "/":    special("other.corp:" + ps),
		"http://203.0.113.80:" + ps + "/":  special("203.0.113.80:" + ps),
		"http://goproxy.corp:9/":           special("goproxy.corp:9"),
		"http://pypi.corp:" + ps + "/":     "403 Forbidden by ralph sandbox: pypi.corp:" + ps + " is at a loopback address; only RALPH_SANDBOX_ALLOW_HOSTS can allow it",
		"http://npm.corp:" + ss + "/x?a=b": "403 Forbidden by ralph sandbox: npm.corp:" + ss + " is at a private address; only RALPH_SANDBOX_ALLOW_HOSTS can allow it",
	} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rule := resp.Header.Get("X-Ralph-Proxy-Rule")
		if resp.Status != status || !strings.HasSuffix(string(body), "refused: "+rule+"\n") || rule == "" {
			t.Errorf("GET %s:\n status %q\n   want %q\n body %q, rule header %q", u, resp.Status, status, body, rule)
		}
	}
	// CONNECT: Go's client returns the reason phrase as the error.
	_, err := c.Get("https://other.corp:" + ss + "/")
	if want := strings.TrimPrefix(special("other.corp:"+ss), "403 "); err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
		t.Errorf("CONNECT other.corp: %v, want an error ending %q", err, want)
	}

	routes.mu.Lock()
	defer routes.mu.Unlock()
	if !sameSet(routes.dialed, []string{"203.0.113.80:" + ps, "203.0.113.80:" + ss, "10.9.8.7:" + ps}) {
		t.Errorf("dialed %q: only the mirrors' exact host and port may be dialed", routes.dialed)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s]--; seen[s] < 0 {
			return false
		}
	}
	return true
}

// A refused request that carries a body still gets its 403, not a reset:
// the answer is written on the hijacked connection, which is drained
// before it is closed.
func TestRefusalWithRequestBodyIsAnswered(t *testing.T) {
	_, c, _ := startProxy(t, nil, staticResolver{"lan.example": {"192.168.0.10"}})
	for i := 0; i < 5; i++ {
		resp, err := c.Post("http://lan.example/upload", "application/octet-stream", strings.NewReader(strings.Repeat("x", 256<<10)))
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Status, "lan.example:80 is at a private address") {
			t.Fatalf("POST %d: %q", i, resp.Status)
		}
	}
}
