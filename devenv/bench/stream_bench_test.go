package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// BenchmarkFirstStreamedToken is the time to an answer's first streamed
// token as the round's heartbeat reports it (firstTokenMs, copied from the
// session's model_progress event), beside the time to the whole answer, for
// a scripted model that answers at once and for one that streams a chunk
// every chunkDelay; streaming off, the first byte is the whole answer.
// Run: go test -run '^$' -bench FirstStreamedToken -benchtime 200x ./devenv/bench/
func BenchmarkFirstStreamedToken(b *testing.B) {
	for _, tc := range []struct {
		name       string
		stream     bool
		chunkDelay time.Duration
	}{
		{"instant/streamed", true, 0},
		{"instant/not-streamed", false, 0},
		{"20ms-chunks/streamed", true, 20 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(fakeopenai.Request) fakeopenai.Response {
				r := submitContinue("a report streamed in many chunks, one every few milliseconds")
				r.ChunkDelay = tc.chunkDelay
				return r
			}})
			defer model.Close()
			cfg := agent.DefaultConfig()
			cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.Stream = model.BaseURL(), benchAPIKey, "bench-model", tc.stream
			var first, answer []time.Duration
			for i := 0; b.Loop(); i++ {
				var firstMs, answerMs int64
				obs := agent.ObserverFunc(func(e agent.Event) {
					switch {
					case e.Kind == agent.EventModelProgress && firstMs == 0:
						firstMs = e.FirstTokenMs
					case e.Kind == agent.EventModelResponse:
						answerMs = e.DurationMs
					}
				})
				req := agent.Request{SessionID: fmt.Sprintf("s%d", i), Objective: "benchmark the stream", Round: 1, MaxRounds: 2, Workspace: b.TempDir()}
				if _, err := agent.RunSession(context.Background(), cfg, req, obs); err != nil {
					b.Fatal(err)
				}
				if tc.stream && firstMs == 0 {
					b.Fatal("no first token reported")
				}
				first, answer = append(first, time.Duration(firstMs)*time.Millisecond), append(answer, time.Duration(answerMs)*time.Millisecond)
			}
			if tc.stream {
				b.ReportMetric(float64(Median(first).Milliseconds()), "first-token-ms")
			}
			b.ReportMetric(float64(Median(answer).Milliseconds()), "answer-ms")
		})
	}
}
