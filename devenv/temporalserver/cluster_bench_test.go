package temporalserver

import (
	"context"
	"testing"
	"time"
)

// BenchmarkClusterStartStop: a whole cluster from nothing to serving
// (cached binaries) and back to nothing.
func BenchmarkClusterStartStop(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		s, err := StartCluster(ctx, ClusterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClusterRestart: SIGTERM the server and start it again until it
// serves, as the restart tests do; -kill measures SIGKILL instead.
func BenchmarkClusterRestart(b *testing.B) {
	for _, kill := range []bool{false, true} {
		name := "sigterm"
		if kill {
			name = "sigkill"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			s, err := StartCluster(ctx, ClusterOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Stop()
			for b.Loop() {
				if kill {
					if err := s.Kill(); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Restart(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
