package tools

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// hostSecret is what a service of the worker's host answers; no command may read it.
const hostSecret = "host-service-secret-7d1c"

// hostService stands for everything on the worker's host (the Temporal
// frontend, metrics, the codec server): a loopback HTTP server.
func hostService(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, hostSecret) }))
	t.Cleanup(s.Close)
	return s
}

func hostPort(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }

func TestSandboxNetworkProxyRefusesHostServices(t *testing.T) {
	svc := hostService(t)
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{}) // the default: proxy
	addr := hostPort(svc)
	out := mustOK(t, call(t, f.w, "run_command", map[string]any{"command": "env | grep -i _proxy= | sort"}))
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "http_proxy=", "https_proxy=", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !strings.Contains(out, want) {
			t.Errorf("command env lacks %s: %s", want, out)
		}
	}
	// Directly: 127.0.0.1 is the sandbox's own loopback, nothing listens.
	res := call(t, f.w, "run_command", map[string]any{"command": "curl -sS -m 10 http://" + addr + "/"})
	if strings.Contains(res.Output, hostSecret) || !strings.Contains(res.Output, "Failed to connect") {
		t.Errorf("direct: %s", res.Output)
	}
	// Through the proxy, plain and CONNECT, by address and by a name that resolves to it.
	_, port, _ := strings.Cut(addr, ":")
	for _, c := range []string{
		"curl -sS -m 10 --noproxy '' -w ' %{http_code}' http://" + addr + "/",
		"curl -sS -m 10 --noproxy '' -w ' %{http_code}' http://localhost.:" + port + "/",
		"curl -sS -m 10 --noproxy '' -k -w ' %{http_code}' https://" + addr + "/",
	} {
		out := call(t, f.w, "run_command", map[string]any{"command": c}).Output
		if strings.Contains(out, hostSecret) || !(strings.Contains(out, "refused: loopback\n 403") || strings.Contains(out, "CONNECT tunnel failed, response 403")) {
			t.Errorf("%s:\n%s", c, out)
		}
	}
	recs := call(t, f.w, "run_command", map[string]any{"command": "curl -s --noproxy '' http://" + addr + "/x; curl -s --noproxy '' -k https://" + addr + "/"}).Network
	want := []netproxy.Record{
		{Method: "GET", Host: "127.0.0.1", Port: svc.Listener.Addr().(*net.TCPAddr).Port, Rule: netproxy.RuleLoopback, Address: "127.0.0.1"},
		{Method: "CONNECT", Host: "127.0.0.1", Port: svc.Listener.Addr().(*net.TCPAddr).Port, Rule: netproxy.RuleLoopback, Address: "127.0.0.1"},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Errorf("records:\n got %+v\nwant %+v", recs, want)
	}
}

func TestSandboxNetworkOff(t *testing.T) {
	svc := hostService(t)
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{Network: sandbox.NetOff, AllowHosts: []string{hostPort(svc)}})
	out := call(t, f.w, "run_command", map[string]any{"command": "env | grep -ic _proxy=; curl -sS -m 10 http://" + hostPort(svc) + "/; curl -sS -m 10 -x http://127.0.0.1:3128 http://" + hostPort(svc) + "/"}).Output
	if strings.Contains(out, hostSecret) || !strings.HasPrefix(out, "exit code: 7\n0\n") {
		t.Errorf("network off: %s", out)
	}
}

// mirror is a local package mirror: plain text, a git repository over the
// smart HTTP protocol, a Go module proxy, an npm registry and a pip index.
type mirror struct {
	*httptest.Server
	tls *httptest.Server
}

func newMirror(t *testing.T) mirror {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "mirrored commit"},
		{"clone", "-q", "--bare", src, filepath.Join(dir, "git", "repo.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mirror says hello") })
	mux.Handle("/git/", &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend", Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Join(dir, "git"), "GIT_HTTP_EXPORT_ALL=1"}})
	// Go module proxy protocol for example.test/hello v1.0.0.
	modZip := zipOf(t, map[string]string{
		"example.test/hello@v1.0.0/go.mod":   "module example.test/hello\n",
		"example.test/hello@v1.0.0/hello.go": "package hello\n\nconst Hello = \"from the mirror\"\n",
	})
	mod := map[string][]byte{
		"/go/example.test/hello/@v/list":        []byte("v1.0.0\n"),
		"/go/example.test/hello/@v/v1.0.0.info": []byte(`{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`),
		"/go/example.test/hello/@v/v1.0.0.mod":  []byte("module example.test/hello\n"),
		"/go/example.test/hello/@v/v1.0.0.zip":  modZip,
	}
	mux.HandleFunc("/go/", func(w http.ResponseWriter, r *http.Request) {
		if b, ok := mod[r.URL.Path]; ok {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	})
	mux.HandleFunc("/npm/tinypkg", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"tinypkg","dist-tags":{"latest":"1.0.7"},"versions":{"1.0.7":{"name":"tinypkg","version":"1.0.7",`+
			`"dist":{"tarball":"http://example.invalid/tinypkg-1.0.7.tgz","shasum":"0000000000000000000000000000000000000000"}}}}`)
	})
	wheel := zipOf(t, map[string]string{
		"tinypkg/__init__.py":                 "",
		"tinypkg-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
		"tinypkg-1.0.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"tinypkg-1.0.dist-info/RECORD":        "",
		"tinypkg-1.0.dist-info/top_level.txt": "tinypkg\n",
	})
	mux.HandleFunc("/pypi/simple/tinypkg/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<html><body><a href="/pypi/files/tinypkg-1.0-py3-none-any.whl">tinypkg-1.0-py3-none-any.whl</a></body></html>`)
	})
	mux.HandleFunc("/pypi/files/tinypkg-1.0-py3-none-any.whl", func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
	m := mirror{Server: httptest.NewServer(mux), tls: httptest.NewTLSServer(mux)}
	t.Cleanup(m.Close)
	t.Cleanup(m.tls.Close)
	return m
}

func zipOf(t *testing.T, files map[string]string) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for name, body := range files {
		w, err := z.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestSandboxNetworkAllowlistedMirror: an allowlisted local mirror is
// reachable through the proxy with curl (plain and CONNECT), git over smart
// HTTP, go, npm and pip; everything else stays refused. The mirror is on
// loopback, which inside the sandbox is the sandbox's own: commands name
// it so that their clients go through the proxy (NO_PROXY unset, and
// "localhost." for Go, which never proxies a loopback literal).
func TestSandboxNetworkAllowlistedMirror(t *testing.T) {
	m := newMirror(t)
	svc := hostService(t)
	addr, tlsAddr := hostPort(m.Server), hostPort(m.tls)
	f := newSandboxFixture(t, sandbox.ModeBwrap, sandbox.Config{AllowHosts: []string{addr, tlsAddr}})
	_, port, _ := strings.Cut(addr, ":")
	noNP := "unset NO_PROXY no_proxy; "
	cases := []struct{ name, command, want string }{
		{"curl", noNP + "curl -sS -m 20 http://" + addr + "/hello", "mirror says hello"},
		{"curl CONNECT", noNP + "curl -sS -m 20 -k https://" + tlsAddr + "/hello", "mirror says hello"},
		{"git", noNP + "git clone -q http://" + addr + "/git/repo.git /tmp/clone && git -C /tmp/clone log --format=%s", "mirrored commit"},
		{"unlisted", noNP + "curl -sS -m 20 -w ' %{http_code}' http://" + hostPort(svc) + "/", "not in RALPH_SANDBOX_ALLOW_HOSTS\n 403"},
	}
	if _, err := exec.LookPath("go"); err == nil {
		cases = append(cases, struct{ name, command, want string }{"go",
			"cd /tmp && mkdir m && cd m && go mod init x >/dev/null 2>&1 && GOFLAGS=-mod=mod GOSUMDB=off GOPROXY=http://localhost.:" + port + "/go " +
				"go mod download -json example.test/hello@v1.0.0 | grep '\"Version\"'", `"Version": "v1.0.0"`})
	}
	if _, err := exec.LookPath("npm"); err == nil {
		cases = append(cases, struct{ name, command, want string }{"npm",
			noNP + "npm view tinypkg version --registry=http://" + addr + "/npm/ --cache /tmp/npm-cache", "1.0.7"})
	}
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err == nil {
		cases = append(cases, struct{ name, command, want string }{"pip",
			noNP + "/usr/bin/python3 -m pip download -q --no-deps --no-cache-dir -d /tmp/dl --index-url http://" + addr + "/pypi/simple/ tinypkg && ls /tmp/dl",
			"tinypkg-1.0-py3-none-any.whl"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, f.w, "run_command", map[string]any{"command": c.command, "timeout_seconds": 120})
			if !strings.Contains(res.Output, c.want) || strings.Contains(res.Output, hostSecret) {
				t.Fatalf("%s:\n%s", c.command, res.Output)
			}
			if len(res.Network) == 0 {
				t.Fatalf("no connection recorded")
			}
			for _, r := range res.Network {
				if c.name != "unlisted" && (!r.Allowed || r.Error != "") {
					t.Errorf("record %+v", r)
				}
			}
		})
	}
}
