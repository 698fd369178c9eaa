//go:build linux

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// BenchmarkRunCommandTrue measures one run_command(`true`) end to end (the
// lifeline, bash, the command's cgroup where the machine has them, and
// under bwrap the namespaces, mounts, the proxy in proxy mode and the
// awaited end of the namespace), reporting p50 and p95 per call. Run with
// -benchtime=200x for the figures in docs/benchmarks.md.
func BenchmarkRunCommandTrue(b *testing.B) {
	for _, c := range []struct {
		name, mode, network string
	}{
		{"off", sandbox.ModeOff, sandbox.NetHost},
		{"bwrap-host", sandbox.ModeBwrap, sandbox.NetHost},
		{"bwrap-netoff", sandbox.ModeBwrap, sandbox.NetOff},
		// The default: own network namespace, the proxy's helper and link,
		// and (where the machine allows) the command's cgroup.
		{"bwrap-proxy", sandbox.ModeBwrap, sandbox.NetProxy},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newSandboxFixture(b, c.mode, sandbox.Config{Network: c.network})
			tool := f.w.Tools()[5] // run_command
			if tool.Name() != "run_command" {
				b.Fatalf("tool 5 is %s", tool.Name())
			}
			args := []byte(`{"command":"true"}`)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				res, err := tool.Run(context.Background(), args)
				lat = append(lat, time.Since(start))
				if err != nil || res.Output != "exit code: 0\n(no output)\n" {
					b.Fatalf("run_command(true) = %+v, %v", res, err)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[(len(lat)*95+99)/100-1]), "p95-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkProxiedDownload fetches 64 MB over HTTPS from a loopback server:
// directly (host network) and through the sandbox's proxy (CONNECT, with
// the server allowlisted), reporting MB/s.
func BenchmarkProxiedDownload(b *testing.B) {
	const size = 64 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(payload) }))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	for _, c := range []struct{ name, network string }{{"direct", sandbox.NetHost}, {"proxied", sandbox.NetProxy}} {
		b.Run(c.name, func(b *testing.B) {
			f := newSandboxFixture(b, sandbox.ModeBwrap, sandbox.Config{Network: c.network, AllowHosts: []string{addr}})
			tool := f.w.Tools()[5]
			args, _ := json.Marshal(map[string]any{"command": "unset NO_PROXY no_proxy; curl -sSk -o /dev/null -w '%{size_download}' https://" + addr + "/"})
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				res, err := tool.Run(context.Background(), args)
				if err != nil || !strings.Contains(res.Output, fmt.Sprint(size)) {
					b.Fatalf("download: %+v %v", res, err)
				}
			}
		})
	}
}
