//go:build linux

package tools

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// BenchmarkRunCommandTrue measures one run_command(`true`) end to end (the
// lifeline, bash, and under bwrap the namespaces, mounts and the awaited end
// of the namespace), reporting p50 and p95 per call. Run with
// -benchtime=200x for the figures in docs/benchmarks.md.
func BenchmarkRunCommandTrue(b *testing.B) {
	for _, mode := range []string{sandbox.ModeOff, sandbox.ModeBwrap} {
		b.Run(mode, func(b *testing.B) {
			f := newSandboxFixture(b, mode, sandbox.Config{Network: true})
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
