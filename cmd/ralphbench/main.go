// Command ralphbench runs Ralph's benchmarks against the real stack and
// prints the result tables (Markdown), also written to -md. See
// docs/benchmarks.md and scripts/bench.sh.
//
//	go run ./cmd/ralphbench                      # everything, dev server
//	go run ./cmd/ralphbench -only overhead,cancel
//	go run ./cmd/ralphbench -with-cluster                # also the PostgreSQL-backed server
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/devenv/bench"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
)

var allSections = []string{"overhead", "scale", "cancel", "crash", "prompt", "history", "encryption"}

// Scenarios that run only when named in -only (they take long).
var extraSections = []string{"churn", "ratelimit"}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		only         = flag.String("only", strings.Join(allSections, ","), "comma-separated benchmarks to run: "+strings.Join(allSections, ",")+" (default), and "+strings.Join(extraSections, ","))
		clusterAddr  = flag.String("cluster", "", "address of a running PostgreSQL-backed Temporal server to measure the overhead on beside the dev server")
		withCluster  = flag.Bool("with-cluster", false, "start a PostgreSQL-backed Temporal cluster (devenv/temporalserver) and measure the overhead on it beside the dev server")
		clusterNS    = flag.String("cluster-namespace", "default", "namespace on -cluster")
		repo         = flag.String("repo", ".", "module root (to build ./worker)")
		workerBin    = flag.String("worker-bin", "", "use this worker binary instead of building ./worker")
		mdPath       = flag.String("md", "", "write the Markdown report here (default: a file in the temp dir)")
		keep         = flag.Bool("keep", false, "keep the temp dir (workspaces, transcripts, worker logs)")
		timeout      = flag.Duration("timeout", 25*time.Minute, "bound on the whole run")
		rounds       = flag.Int("overhead-rounds", 20, "rounds per run in the overhead benchmark")
		reps         = flag.Int("overhead-reps", 10, "measured runs of each loop per server and eager setting")
		scaleRuns    = flag.String("scale-runs", "10,25,50,100", "concurrent run counts of the scale benchmark")
		scaleSlots   = flag.String("scale-concurrent-rounds", "8,100", "RALPH_CONCURRENT_ROUNDS settings of the scale benchmark (8 is the default)")
		scaleRounds  = flag.Int("scale-rounds", 5, "rounds per run in the scale benchmark")
		scaleLatency = flag.Duration("scale-latency", 200*time.Millisecond, "scripted model latency per call in the scale benchmark")
		cancelN      = flag.Int("cancel-samples", 20, "samples of the cancellation benchmark")
		crashN       = flag.Int("crash-samples", 5, "samples per heartbeat setting of the crash-recovery benchmark")
		crashHB      = flag.String("crash-heartbeat-timeouts", "5,2", "RALPH_HEARTBEAT_TIMEOUT_SECONDS settings of the crash benchmark (5 is the default)")
		churnRuns    = flag.Int("churn-runs", 500, "runs of the load-and-churn scenario (with -with-cluster it runs on the PostgreSQL server)")
		churnRounds  = flag.Int("churn-rounds", 3, "rounds per run of the churn scenario")
		churnWorkers = flag.Int("churn-workers", 3, "worker processes of the churn scenario")
		churnLatency = flag.Duration("churn-latency", 20*time.Millisecond, "scripted model latency per call in the churn scenario")
		churnSeries  = flag.Int("churn-throughput-runs", 150, "runs of each step of the churn scenario's 1..N-worker throughput series (0 skips it)")
		rlRuns       = flag.Int("ratelimit-runs", 20, "concurrent runs of the rate-limit scenario")
		rlWindow     = flag.Duration("ratelimit-window", 5*time.Minute, "how long the provider rate-limits in the rate-limit scenario")
		rlBefore     = flag.String("ratelimit-before-bin", "", "a worker binary built from an earlier commit, measured as \"before\" in the rate-limit scenario")
		workerEnv    = flag.String("worker-env", "", "comma-separated KEY=VALUE worker settings applied to every benchmark's workers (e.g. RALPH_MODEL_STREAM=off)")
	)
	flag.Parse()
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !contains(allSections, s) && !contains(extraSections, s) {
			fmt.Fprintf(os.Stderr, "ralphbench: unknown benchmark %q (have %s)\n", s, strings.Join(append(allSections, extraSections...), ","))
			return 2
		}
		want[s] = true
	}
	runsList, err := ints(*scaleRuns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench: -scale-runs:", err)
		return 2
	}
	slotsList, err := ints(*scaleSlots)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench: -scale-concurrent-rounds:", err)
		return 2
	}
	settings, err := keyValues(*workerEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench: -worker-env:", err)
		return 2
	}
	hbList, err := ints(*crashHB)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench: -crash-heartbeat-timeouts:", err)
		return 2
	}

	// SIGINT/SIGTERM end the run cleanly: workers and the dev server stop.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, *timeout)
	defer cancel()
	began := time.Now()

	dir, err := os.MkdirTemp("", "ralphbench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench:", err)
		return 1
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "ralphbench: keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	// The in-process worker's own logs (slog) go to a file, not the tables.
	logFile, err := os.Create(filepath.Join(dir, "inproc.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench:", err)
		return 1
	}
	defer logFile.Close()
	slog.SetDefault(slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelWarn})))

	progress := os.Stderr
	bin := *workerBin
	if bin == "" {
		bin = filepath.Join(dir, "worker")
		fmt.Fprintln(progress, "ralphbench: go build ./worker")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./worker")
		cmd.Dir = *repo
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "ralphbench: build the worker: %v\n%s", err, out)
			return 1
		}
	}

	fmt.Fprintln(progress, "ralphbench: starting the Temporal dev server")
	dev, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{DBFile: filepath.Join(dir, "temporal.db"), Output: io.Discard})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench:", err)
		return 1
	}
	defer dev.Stop()
	devClient, err := dev.Dial(ctx, client.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench: dial the dev server:", err)
		return 1
	}
	defer devClient.Close()

	h := &bench.Harness{
		Dir:       dir,
		WorkerBin: bin,
		Dev:       bench.Target{Name: "dev server", Address: dev.Address, Namespace: dev.Namespace, Client: devClient},
		DevPID:    dev.PID(),
		Progress:  progress,
		Tag:       strconv.FormatInt(time.Now().Unix()%1_000_000, 36),
		Settings:  settings,
	}
	var serverRestart func(context.Context) error
	var dbSize func(context.Context) (int64, error)
	if *withCluster {
		if *clusterAddr != "" {
			fmt.Fprintln(os.Stderr, "ralphbench: -cluster and -with-cluster exclude each other")
			return 2
		}
		fmt.Fprintln(progress, "ralphbench: starting the PostgreSQL-backed cluster")
		cl, err := temporalserver.StartCluster(ctx, temporalserver.ClusterOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "ralphbench:", err)
			return 1
		}
		defer cl.Stop()
		*clusterAddr, *clusterNS = cl.Address, cl.Namespace
		serverRestart = cl.Restart
		dbSize = func(ctx context.Context) (int64, error) { return postgresSize(ctx, cl.PostgresURL) }
	}
	if *clusterAddr != "" {
		c, err := client.DialContext(ctx, client.Options{HostPort: *clusterAddr, Namespace: *clusterNS, Logger: temporalserver.QuietLogger{}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "ralphbench: dial the cluster at %s: %v\n", *clusterAddr, err)
			return 1
		}
		defer c.Close()
		h.Cluster = &bench.Target{Name: "PostgreSQL server", Address: *clusterAddr, Namespace: *clusterNS, Client: c}
	}

	var doc strings.Builder
	fmt.Fprintf(&doc, "# Ralph benchmark run\n\n%s\n\n", environment(ctx, h))
	flagLine := "flags: " + strings.Join(os.Args[1:], " ")
	if len(os.Args) == 1 {
		flagLine = "flags: (defaults)"
	}
	fmt.Fprintf(&doc, "%s\n\n", flagLine)
	fmt.Println(doc.String())

	cmdFor := func(name string, extra string) string {
		c := "scripts/bench.sh -only " + name
		if extra != "" {
			c += " " + extra
		}
		return c
	}
	type step struct {
		name string
		cmd  string
		run  func() (bench.Section, error)
	}
	overheadCmd := cmdFor("overhead", fmt.Sprintf("-overhead-rounds %d -overhead-reps %d", *rounds, *reps))
	if h.Cluster != nil {
		overheadCmd += " -with-cluster"
	}
	steps := []step{
		{"overhead", overheadCmd, func() (bench.Section, error) {
			return h.Overhead(ctx, bench.OverheadConfig{Rounds: *rounds, Reps: *reps})
		}},
		{"scale", cmdFor("scale", fmt.Sprintf("-scale-runs %s -scale-concurrent-rounds %s -scale-rounds %d -scale-latency %s", *scaleRuns, *scaleSlots, *scaleRounds, *scaleLatency)),
			func() (bench.Section, error) {
				return h.Scale(ctx, bench.ScaleConfig{Runs: runsList, ConcurrentRounds: slotsList, Rounds: *scaleRounds, Latency: *scaleLatency})
			}},
		{"cancel", cmdFor("cancel", fmt.Sprintf("-cancel-samples %d", *cancelN)), func() (bench.Section, error) {
			return h.Cancel(ctx, bench.CancelConfig{Samples: *cancelN})
		}},
		{"crash", cmdFor("crash", fmt.Sprintf("-crash-samples %d -crash-heartbeat-timeouts %s", *crashN, *crashHB)), func() (bench.Section, error) {
			return h.Crash(ctx, bench.CrashConfig{Samples: *crashN, HeartbeatTimeouts: hbList})
		}},
		{"prompt", cmdFor("prompt", ""), func() (bench.Section, error) { return h.Prompt(ctx) }},
		{"history", cmdFor("history", ""), func() (bench.Section, error) { return h.History(ctx) }},
		{"ratelimit", cmdFor("ratelimit", fmt.Sprintf("-ratelimit-runs %d -ratelimit-window %s -ratelimit-before-bin <worker built from the earlier commit>", *rlRuns, *rlWindow)),
			func() (bench.Section, error) {
				var workers []bench.LabelledWorker
				if *rlBefore != "" {
					workers = append(workers, bench.LabelledWorker{Label: "before: " + *rlBefore, Bin: *rlBefore})
				}
				workers = append(workers, bench.LabelledWorker{Label: "after: this build"})
				return h.RateLimit(ctx, bench.RateLimitConfig{Runs: *rlRuns, Window: *rlWindow, Workers: workers})
			}},
		{"churn", cmdFor("churn", fmt.Sprintf("-churn-runs %d -churn-rounds %d -churn-workers %d -churn-latency %s -churn-throughput-runs %d -with-cluster",
			*churnRuns, *churnRounds, *churnWorkers, *churnLatency, *churnSeries)), func() (bench.Section, error) {
			if h.Cluster == nil {
				serverRestart = func(ctx context.Context) error { return dev.Restart(ctx) }
			}
			return h.ChurnSection(ctx, bench.ChurnSectionConfig{ThroughputRuns: *churnSeries, ChurnConfig: bench.ChurnConfig{
				Runs: *churnRuns, Rounds: *churnRounds, Workers: *churnWorkers, Latency: *churnLatency,
				RollingRestart: true, Kill: true, ServerRestart: serverRestart, DBSize: dbSize,
			}})
		}},
		{"encryption", cmdFor("encryption", fmt.Sprintf("-overhead-rounds %d -overhead-reps %d", *rounds, *reps)), func() (bench.Section, error) {
			return h.Encryption(ctx, bench.EncryptionConfig{Rounds: *rounds, Reps: *reps})
		}},
	}
	failed := false
	for _, s := range steps {
		if !want[s.name] {
			continue
		}
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "ralphbench: %s skipped: %v\n", s.name, ctx.Err())
			failed = true
			continue
		}
		t0 := time.Now()
		sec, err := s.run()
		if sec.Title == "" {
			sec.Title = s.name
		}
		sec.Command = s.cmd
		if err != nil {
			failed = true
			sec.Notes = append(sec.Notes, "**benchmark failed:** "+err.Error())
			fmt.Fprintf(os.Stderr, "ralphbench: %s failed: %v\n", s.name, err)
		}
		sec.Notes = append(sec.Notes, fmt.Sprintf("This benchmark took %s; load average (1, 5 min) after it: %s.", time.Since(t0).Round(time.Second), loadAvg()))
		md := sec.Markdown()
		fmt.Println(md)
		doc.WriteString(md)
	}
	total := fmt.Sprintf("Whole run: %s.\n", time.Since(began).Round(time.Second))
	fmt.Println(total)
	doc.WriteString(total)

	path := *mdPath
	if path == "" {
		path = filepath.Join(os.TempDir(), "ralphbench-"+time.Now().Format("20060102-150405")+".md")
	}
	if err := os.WriteFile(path, []byte(doc.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench: write the report:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "ralphbench: report written to", path)
	if failed {
		// A benchmark that could not run at all is an error; slowness never is.
		return 1
	}
	return 0
}

func environment(ctx context.Context, h *bench.Harness) string {
	var lines []string
	lines = append(lines, "- date: "+time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					mem = fmt.Sprintf(", %.0f GiB memory", float64(kb)/1024/1024)
				}
			}
		}
	}
	lines = append(lines, fmt.Sprintf("- machine: %d cores (%s)%s, %s/%s, %s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH, runtime.Version()))
	lines = append(lines, "- load average (1, 5 min) at the start: "+loadAvg()+" (the machine is shared: other work runs beside the benchmark)")
	targets := []bench.Target{h.Dev}
	if h.Cluster != nil {
		targets = append(targets, *h.Cluster)
	}
	for _, t := range targets {
		v := "?"
		if info, err := t.Client.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{}); err == nil {
			v = info.GetServerVersion()
		}
		lines = append(lines, fmt.Sprintf("- %s: Temporal server %s at %s", t.Name, v, t.Address))
	}
	return strings.Join(lines, "\n")
}

// loadAvg is the 1- and 5-minute load average from /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return "?"
	}
	return f[0] + ", " + f[1]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// postgresSize is the size of the Temporal databases in bytes.
func postgresSize(ctx context.Context, url string) (int64, error) {
	out, err := exec.CommandContext(ctx, "psql", url, "-Atc",
		"select sum(pg_database_size(datname)) from pg_database where datname like 'temporal%'").Output()
	if err != nil {
		return 0, fmt.Errorf("psql: %w", err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

// keyValues parses "K=V,K2=V2".
func keyValues(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not KEY=VALUE", f)
		}
		out[k] = v
	}
	return out, nil
}
