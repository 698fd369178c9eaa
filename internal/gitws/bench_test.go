package gitws

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmark workspace: benchFiles files of benchFileSize bytes (10,000
// files, 100 MB), incompressible content, 100 per directory.
const (
	benchFiles    = 10000
	benchFileSize = 10 << 10
	// benchEdits files change in each benchmarked round.
	benchEdits = 10
)

func benchWorkspace(b *testing.B, dir string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, benchFileSize)
	for i := range benchFiles {
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		path := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.bin", i))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// editRound changes benchEdits files, as a round's session would.
func editRound(b *testing.B, dir string, n int) {
	b.Helper()
	for k := range benchEdits {
		i := (n*benchEdits + k) * 7919 % benchFiles
		path := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.bin", i))
		if err := os.WriteFile(path, fmt.Appendf(nil, "round %d edit %d\n", n, k), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// report adds p50 and p95 of the timed samples to the benchmark's output.
func report(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(0, "ns/op") // the loop also times setup edits; the quantiles are the result
}

// benchRounds runs b.N rounds on a prepared workspace and times step.
func benchRounds(b *testing.B, step func(n int) time.Duration) {
	samples := make([]time.Duration, 0, b.N)
	for n := 0; b.Loop(); n++ {
		samples = append(samples, step(n))
	}
	report(b, samples)
}

// BenchmarkCheckpointLocal: the commit of one round (git add -A, write-tree,
// commit-tree, update-ref, shortstat) on the 10,000-file, 100 MB workspace.
func BenchmarkCheckpointLocal(b *testing.B) {
	ctx := context.Background()
	g := benchGit(b, ModeLocal, "")
	dir := benchDir(b)
	benchWorkspace(b, dir)
	p, err := g.Prepare(ctx, dir, Round{WorkflowID: "bench", Workspace: "ws", Round: 1, MaxRounds: 1 << 20, Attempt: 1})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := g.Checkpoint(ctx, dir, p, Round{WorkflowID: "bench", Workspace: "ws", Round: 1, MaxRounds: 1 << 20, Attempt: 1}, Handoff{"s", "continue", "initial"}); err != nil {
		b.Fatal(err)
	}
	benchRounds(b, func(n int) time.Duration {
		r := Round{WorkflowID: "bench", Workspace: "ws", Round: n + 2, MaxRounds: 1 << 20, Attempt: 1}
		p, err := g.Prepare(ctx, dir, r)
		if err != nil {
			b.Fatal(err)
		}
		editRound(b, dir, n)
		start := time.Now()
		if _, _, err := g.Checkpoint(ctx, dir, p, r, Handoff{"s", "continue", "edited"}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	})
}

// BenchmarkCheckpointRemote: one round's git traffic against a local bare
// repository: Prepare (ls-remote, fetch, leftover check, reset) and the
// checkpoint with its push.
func BenchmarkCheckpointRemote(b *testing.B) {
	ctx := context.Background()
	bare := filepath.Join(b.TempDir(), "remote.git")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		b.Fatal(err)
	}
	g := benchGit(b, ModeRemote, bare)
	if _, err := g.run(ctx, bare, cmdOpts{}, "init", "-q", "--bare", "."); err != nil {
		b.Fatal(err)
	}
	dir := benchDir(b)
	first := Round{WorkflowID: "bench", Workspace: "ws", Round: 1, MaxRounds: 1 << 20, Attempt: 1}
	p, err := g.Prepare(ctx, dir, first)
	if err != nil {
		b.Fatal(err)
	}
	// Round 1 writes the whole workspace (a clone's own files that the
	// branch lacks would be saved away by Prepare) and pushes it.
	benchWorkspace(b, dir)
	if _, _, err := g.Checkpoint(ctx, dir, p, first, Handoff{"s", "continue", "initial"}); err != nil {
		b.Fatal(err)
	}
	benchRounds(b, func(n int) time.Duration {
		r := Round{WorkflowID: "bench", Workspace: "ws", Round: n + 2, MaxRounds: 1 << 20, Attempt: 1}
		start := time.Now()
		p, err := g.Prepare(ctx, dir, r)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		editRound(b, dir, n)
		start = time.Now()
		if _, _, err := g.Checkpoint(ctx, dir, p, r, Handoff{"s", "continue", "edited"}); err != nil {
			b.Fatal(err)
		}
		return took + time.Since(start)
	})
}

// BenchmarkFingerprintGit: the work tree's id (temporary index + write-tree)
// of the 10,000-file workspace after a round changed benchEdits files.
func BenchmarkFingerprintGit(b *testing.B) {
	ctx := context.Background()
	g := benchGit(b, ModeLocal, "")
	dir := benchDir(b)
	benchWorkspace(b, dir)
	r := Round{WorkflowID: "bench", Workspace: "ws", Round: 1, MaxRounds: 2, Attempt: 1}
	p, err := g.Prepare(ctx, dir, r)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := g.Checkpoint(ctx, dir, p, r, Handoff{"s", "continue", "initial"}); err != nil {
		b.Fatal(err)
	}
	benchRounds(b, func(n int) time.Duration {
		editRound(b, dir, n)
		start := time.Now()
		if _, err := g.WorkTree(ctx, dir); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	})
}

// BenchmarkFingerprintFiles: path, size, mode and mtime of every file of the
// 10,000-file workspace (git off).
func BenchmarkFingerprintFiles(b *testing.B) {
	ctx := context.Background()
	dir := benchDir(b)
	benchWorkspace(b, dir)
	benchRounds(b, func(n int) time.Duration {
		editRound(b, dir, n)
		start := time.Now()
		if _, err := FilesFingerprint(ctx, dir); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	})
}

func benchGit(b *testing.B, mode, remote string) *Git {
	b.Helper()
	cfg := DefaultConfig()
	cfg.Mode, cfg.Remote = mode, remote
	g, err := New(cfg, filepath.Join(b.TempDir(), "hooks"))
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func benchDir(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "root", "ws")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkStartCandidates: a three-candidate round's clones (StartCandidate
// three times) of a source-sized workspace (demoFiles text files of 4 KB,
// 1.2 MB, five checkpoints of history) whose repository also holds two
// earlier rounds' other candidates, which a clone must not carry.
func BenchmarkStartCandidates(b *testing.B) {
	ctx := context.Background()
	g := benchGit(b, ModeLocal, "")
	dir := benchDir(b)
	var base string
	for n := 1; n <= 5; n++ {
		r := Round{WorkflowID: "bench", Workspace: "ws", Round: n, MaxRounds: 1 << 20, Attempt: 1}
		p, err := g.Prepare(ctx, dir, r)
		if err != nil {
			b.Fatal(err)
		}
		for i := range demoFiles {
			if i%n == 0 {
				line := fmt.Sprintf("round %d file %d: some source text\n", n, i)
				path := filepath.Join(dir, fmt.Sprintf("pkg%02d", i/20), fmt.Sprintf("f%03d.go", i))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(strings.Repeat(line, 4096/len(line))), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		cp, _, err := g.Checkpoint(ctx, dir, p, r, Handoff{"s", "continue", "round"})
		if err != nil {
			b.Fatal(err)
		}
		base = cp.Commit
	}
	cands := filepath.Join(b.TempDir(), "candidates")
	var cpu time.Duration // git's CPU time: wall clock on a busy machine is mostly waiting
	benchRounds(b, func(n int) time.Duration {
		start, before := time.Now(), childCPU(b)
		for k := range 3 {
			if err := g.StartCandidate(ctx, dir, filepath.Join(cands, fmt.Sprintf("%d-%d", n, k)), base); err != nil {
				b.Fatal(err)
			}
		}
		took := time.Since(start)
		cpu += childCPU(b) - before
		if err := os.RemoveAll(cands); err != nil {
			b.Fatal(err)
		}
		return took
	})
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "git-cpu-ms/round")
}

// childCPU is the user and system time of the finished child processes.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// demoFiles is the source-sized workspace's file count.
const demoFiles = 300
