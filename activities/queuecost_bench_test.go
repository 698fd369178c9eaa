package activities_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/gitws"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// The queue's own cost (SPEC 41): everything MergeTask does but the verify
// command, and PrepareTask, on the real activities with real git against a
// local bare repository in remote mode (the campaign benchmark's setting).
// "demo" is a repository the size of the campaign demo's (a few small files
// and commits); "large" one of 10,000 files and 100 MB, generated here.

// queueBench is one benchmark's remote, its seed clone and a worker.
type queueBench struct {
	b    *testing.B
	bare string
	seed string // the test's own clone, where task commits are made
	base string // the seed's first commit, every task's parent
	env  *testsuite.TestActivityEnvironment
	line activities.CampaignLine
}

func newQueueBench(b *testing.B, large bool) *queueBench {
	return newQueueBenchIn(b, large, sandbox.ModeOff)
}

// newQueueBenchIn is newQueueBench with the sandbox in mode: bwrap, as a
// root worker deploys it, makes merge verifies run as another uid (and lends
// them tree copies: internal/gitws/treecopy.go).
func newQueueBenchIn(b *testing.B, large bool, mode string) *queueBench {
	b.Helper()
	dir := b.TempDir()
	q := &queueBench{b: b, bare: filepath.Join(dir, "remote.git"), seed: filepath.Join(dir, "seed"),
		line: activities.CampaignLine{Campaign: "bench", Branch: "integration"}}
	q.git(dir, "init", "-q", "--bare", "-b", "main", q.bare)
	q.git(dir, "init", "-q", "-b", "main", q.seed)
	if large {
		benchLargeTree(b, q.seed)
	} else {
		for i := range 3 {
			writeBenchFile(b, filepath.Join(q.seed, fmt.Sprintf("greeting-%d.txt", i)), []byte("hello\n"))
		}
	}
	q.git(q.seed, "add", "-A")
	q.git(q.seed, "commit", "-q", "-m", "seed")
	q.git(q.seed, "push", "-q", q.bare, "main")
	q.base = q.git(q.seed, "rev-parse", "HEAD")

	cfg := activities.DefaultConfig()
	cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(dir, "workspaces"), filepath.Join(dir, "sessions")
	cfg.Git.Mode, cfg.Git.Remote, cfg.Sandbox.Mode = gitws.ModeRemote, q.bare, mode
	cfg.Agent.BaseURL, cfg.Agent.APIKey, cfg.Agent.Model = "http://127.0.0.1:1", testKey, "unused" // no model is called
	acts, err := activities.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	q.env = suite.NewTestActivityEnvironment()
	acts.Register(q.env)
	return q
}

func (q *queueBench) git(dir string, args ...string) string {
	q.b.Helper()
	// No auto gc: after the large seed's 10,000 loose objects it would run
	// detached, take CPU from the measured steps and race TempDir's cleanup.
	cmd := exec.Command("git", append([]string{"-c", "user.name=b", "-c", "user.email=b@b", "-c", "gc.auto=0"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		q.b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// task pushes task n's branch: one new file on the seed's first commit.
func (q *queueBench) task(n int) activities.CampaignTask {
	id := fmt.Sprintf("t%d", n)
	ws := activities.TaskWorkspace(q.line.Campaign, id)
	q.git(q.seed, "checkout", "-q", "--detach", q.base)
	writeBenchFile(q.b, filepath.Join(q.seed, "tasks", id+".txt"), []byte("task "+id+"\n"))
	q.git(q.seed, "add", "-A")
	q.git(q.seed, "commit", "-q", "-m", "task "+id)
	q.git(q.seed, "push", "-q", q.bare, "HEAD:refs/heads/"+gitws.Branch(ws))
	return activities.CampaignTask{ID: id, Workspace: ws, Commit: q.git(q.seed, "rev-parse", "HEAD"), Go: 1}
}

// merge runs MergeTask on task n and returns its time less the verify's.
func (q *queueBench) merge(n int) time.Duration {
	t := q.task(n)
	start := time.Now()
	val, err := q.env.ExecuteActivity(activities.MergeTaskName, activities.MergeTaskInput{Line: q.line,
		Tasks: []activities.CampaignTask{t}, VerifyCommand: "true"})
	took := time.Since(start)
	var out activities.MergeTaskOutput
	if err != nil || val.Get(&out) != nil || out.Outcome != activities.MergeLanded || out.Verification == nil {
		q.b.Fatalf("MergeTask of %s: %+v, %v", t.ID, out, err)
	}
	return took - time.Duration(out.Verification.DurationMs)*time.Millisecond
}

// prepare runs PrepareTask for a new task n's first go (its branch made at
// the integration head).
func (q *queueBench) prepare(n int) time.Duration {
	id := fmt.Sprintf("p%d", n)
	start := time.Now()
	if _, err := q.env.ExecuteActivity(activities.PrepareTaskName, activities.PrepareTaskInput{Line: q.line,
		Task: activities.CampaignTask{ID: id, Workspace: activities.TaskWorkspace(q.line.Campaign, id), Go: 1}}); err != nil {
		q.b.Fatalf("PrepareTask of %s: %v", id, err)
	}
	return time.Since(start)
}

// run times step b.N times after one untimed warm-up and reports p50/p95.
// git-cpu-ms is the CPU time of the worker's git per step (and the test's
// own git setting a task up, about 10 ms of it): on a shared machine the
// wall clock is mostly waiting.
func (q *queueBench) run(step func(n int) time.Duration) {
	step(-1)
	var samples []time.Duration
	before := childCPU(q.b)
	for n := 0; q.b.Loop(); n++ {
		samples = append(samples, step(n))
	}
	q.b.ReportMetric(float64((childCPU(q.b)-before).Microseconds())/1000/float64(len(samples)), "git-cpu-ms")
	slices.Sort(samples)
	at := func(f float64) float64 {
		return float64(samples[min(len(samples)-1, int(f*float64(len(samples))))].Microseconds()) / 1000
	}
	q.b.ReportMetric(at(0.5), "p50-ms")
	q.b.ReportMetric(at(0.95), "p95-ms")
	q.b.ReportMetric(0, "ns/op") // the loop also times the task's setup; the quantiles are the result
}

// BenchmarkQueueCostDemo: MergeTask's own cost per merge on a demo-sized
// repository.
func BenchmarkQueueCostDemo(b *testing.B) {
	q := newQueueBench(b, false)
	q.run(q.merge)
}

// BenchmarkQueueCostLarge: MergeTask's own cost per merge on a repository
// of 10,000 files and 100 MB.
func BenchmarkQueueCostLarge(b *testing.B) {
	q := newQueueBench(b, true)
	q.run(q.merge)
}

// BenchmarkQueueCostDemoJailed and BenchmarkQueueCostLargeJailed: the same
// with the verify in bubblewrap, as another uid (a root worker's setting).
func BenchmarkQueueCostDemoJailed(b *testing.B) {
	q := newQueueBenchIn(b, false, sandbox.ModeBwrap)
	q.run(q.merge)
}

func BenchmarkQueueCostLargeJailed(b *testing.B) {
	q := newQueueBenchIn(b, true, sandbox.ModeBwrap)
	q.run(q.merge)
}

// BenchmarkPrepareTaskDemo and BenchmarkPrepareTaskLarge: a task's first
// PrepareTask.
func BenchmarkPrepareTaskDemo(b *testing.B) {
	q := newQueueBench(b, false)
	q.run(q.prepare)
}

func BenchmarkPrepareTaskLarge(b *testing.B) {
	q := newQueueBench(b, true)
	q.run(q.prepare)
}

// benchLargeTree writes 10,000 files of 10 KB of incompressible bytes, 100
// per directory: 100 MB.
func benchLargeTree(b *testing.B, dir string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 10<<10)
	for i := range 10000 {
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		writeBenchFile(b, filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.bin", i)), buf)
	}
}

func writeBenchFile(b *testing.B, path string, data []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// childCPU is the user and system time of the finished child processes.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
