package cli

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// The gateway's cost beside a direct call to the provider (the scripted
// server, answering at once): per request, and to the first streamed byte
// (docs/benchmarks.md). The sandbox's unix-socket hop is not in it.

func BenchmarkGatewayRequest(b *testing.B) { benchRequests(b, true) }
func BenchmarkDirectRequest(b *testing.B)  { benchRequests(b, false) }

func benchRequests(b *testing.B, viaGateway bool) {
	srv := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Text("working on it")
	}})
	b.Cleanup(srv.Close)
	url, auth := srv.BaseURL(), "Bearer sk-bench-key-0123456789"
	if viaGateway {
		cfg := agent.DefaultConfig()
		cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.MaxModelCalls = srv.BaseURL(), "sk-bench-key-0123456789", "fake-model", 1<<30
		desk, err := agent.OpenDesk(cfg, agent.Request{SessionID: "b", Objective: "Bench.", Round: 1, MaxRounds: 1, Workspace: b.TempDir()}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _, _ = desk.Close(context.Background(), nil) })
		gw := newGateway(context.Background(), apis[APIChat], desk, cfg, srv.BaseURL(), cfg.APIKey, "tok", "submit_report", false,
			gatewayLimits{inflight: DefaultMaxInflight, body: DefaultMaxRequestMB << 20})
		hs := httptest.NewServer(gw)
		b.Cleanup(hs.Close)
		url, auth = hs.URL+"/v1", "Bearer tok"
	}
	body := `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("work ", 200) + `"}]}`
	var first time.Duration
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadByte(); err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		for {
			if _, err := br.ReadByte(); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N), "µs-to-first-byte/op")
}
