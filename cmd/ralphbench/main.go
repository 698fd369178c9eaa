// Command ralphbench runs Ralph's benchmarks against the real stack and
// prints the result tables (Markdown), also written to -md. See
// docs/benchmarks.md and scripts/bench.sh.
//
//	go run ./cmd/ralphbench                      # everything, dev server
//	go run ./cmd/ralphbench -only overhead,cancel
//	go run ./cmd/ralphbench -with-cluster                # also the PostgreSQL-backed server
//	go run ./cmd/ralphbench -only section41              # SPEC 41's benchmarks in one run
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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
var extraSections = []string{"churn", "ratelimit", "agents", "campaign", "candidates", "lanes", "queuecost", "warmverify", "warmcampaign"}

// groups name several benchmarks at once in -only. section41 is SPEC 41's
// benchmark side by side in one run (docs/benchmarks.md); its warm
// verifies are a campaign's (warmcampaign: the SPEC's words), warmverify
// the merge verify's path alone, each merge beside the host at once.
var groups = map[string][]string{"section41": {"lanes", "queuecost", "candidates", "warmcampaign"}}

func main() {
	os.Exit(run())
}

// options are the command's flags.
type options struct {
	only                        string
	clusterAddr, clusterNS      string
	withCluster                 bool
	repo, workerBin, mdPath     string
	keep                        bool
	timeout                     time.Duration
	rounds, reps                int
	scaleRuns, scaleSlots       string
	scaleRounds                 int
	scaleLatency                time.Duration
	cancelN, crashN             int
	crashHB                     string
	churnRuns, churnRounds      int
	churnWorkers, churnSeries   int
	churnLatency                time.Duration
	rlRuns                      int
	rlWindow                    time.Duration
	rlBefore                    string
	workerEnv                   string
	cpuProfile                  string
	overheadOff                 string
	off                         []string // -overhead-off, checked
	agentRounds                 int
	agentKinds, agentCLIDir     string
	mergeLanes, lanesWorkers    string
	lanesVerify                 string
	lanesTasks                  int
	lanesLoop                   time.Duration
	queueCostBench              string
	queueCostDemo, queueCostBig int
	campaignTasks               int
	warmMerges                  int
	warmTasks                   int
	settings                    map[string]string // -worker-env
	want                        map[string]bool   // the benchmarks named in -only
	runsList, slotsList, hbList []int
	lanesList, workersList      []int
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.only, "only", strings.Join(allSections, ","), "comma-separated benchmarks to run: "+strings.Join(allSections, ",")+" (default), and "+strings.Join(extraSections, ",")+
		"; section41 names "+strings.Join(groups["section41"], ",")+" (SPEC 41's benchmark in one run)")
	flag.StringVar(&o.clusterAddr, "cluster", "", "address of a running PostgreSQL-backed Temporal server to measure the overhead on beside the dev server")
	flag.BoolVar(&o.withCluster, "with-cluster", false, "start a PostgreSQL-backed Temporal cluster (devenv/temporalserver) and measure the overhead on it beside the dev server")
	flag.StringVar(&o.clusterNS, "cluster-namespace", "default", "namespace on -cluster")
	flag.StringVar(&o.repo, "repo", ".", "module root (to build ./worker)")
	flag.StringVar(&o.workerBin, "worker-bin", "", "use this worker binary instead of building ./worker")
	flag.StringVar(&o.mdPath, "md", "", "write the Markdown report here (default: a file in the temp dir)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temp dir (workspaces, transcripts, worker logs)")
	flag.DurationVar(&o.timeout, "timeout", 45*time.Minute, "bound on the whole run")
	flag.IntVar(&o.rounds, "overhead-rounds", 20, "rounds per run in the overhead benchmark")
	flag.IntVar(&o.reps, "overhead-reps", 10, "measured runs of each loop per server and eager setting")
	flag.StringVar(&o.scaleRuns, "scale-runs", "10,25,50,100", "concurrent run counts of the scale benchmark")
	flag.StringVar(&o.scaleSlots, "scale-concurrent-rounds", "8,100", "RALPH_CONCURRENT_ROUNDS settings of the scale benchmark (8 is the default)")
	flag.IntVar(&o.scaleRounds, "scale-rounds", 5, "rounds per run in the scale benchmark")
	flag.DurationVar(&o.scaleLatency, "scale-latency", 200*time.Millisecond, "scripted model latency per call in the scale benchmark")
	flag.IntVar(&o.cancelN, "cancel-samples", 20, "samples of the cancellation benchmark")
	flag.IntVar(&o.crashN, "crash-samples", 5, "samples per heartbeat setting of the crash-recovery benchmark")
	flag.StringVar(&o.crashHB, "crash-heartbeat-timeouts", "5,2", "RALPH_HEARTBEAT_TIMEOUT_SECONDS settings of the crash benchmark (5 is the default)")
	flag.IntVar(&o.churnRuns, "churn-runs", 500, "runs of the load-and-churn scenario (with -with-cluster it runs on the PostgreSQL server)")
	flag.IntVar(&o.churnRounds, "churn-rounds", 3, "rounds per run of the churn scenario")
	flag.IntVar(&o.churnWorkers, "churn-workers", 3, "worker processes of the churn scenario")
	flag.DurationVar(&o.churnLatency, "churn-latency", 20*time.Millisecond, "scripted model latency per call in the churn scenario")
	flag.IntVar(&o.churnSeries, "churn-throughput-runs", 150, "runs of each step of the churn scenario's 1..N-worker throughput series (0 skips it)")
	flag.IntVar(&o.rlRuns, "ratelimit-runs", 20, "concurrent runs of the rate-limit scenario")
	flag.DurationVar(&o.rlWindow, "ratelimit-window", 5*time.Minute, "how long the provider rate-limits in the rate-limit scenario")
	flag.StringVar(&o.rlBefore, "ratelimit-before-bin", "", "a worker binary built from an earlier commit, measured as \"before\" in the rate-limit scenario")
	flag.IntVar(&o.agentRounds, "agents-rounds", 6, "rounds per provider of the agent providers' fixed-cost benchmark")
	flag.IntVar(&o.campaignTasks, "campaign-tasks", 12, "one-round tasks of each campaign the campaign benchmark runs")
	flag.StringVar(&o.mergeLanes, "lanes", "1,2,4", "comma-separated mergeLanes values the lanes benchmark runs, one campaign each")
	flag.IntVar(&o.lanesTasks, "lanes-tasks", 16, "tasks of each campaign the lanes benchmark runs")
	flag.DurationVar(&o.lanesLoop, "lanes-loop", 5*time.Second, "how long each task's loop takes in the lanes benchmark (the scripted model's delay)")
	flag.StringVar(&o.lanesVerify, "lanes-verify", "sleep 10", "the campaign's verify command in the lanes benchmark")
	flag.StringVar(&o.lanesWorkers, "lanes-workers", "1,3", "comma-separated worker process counts the lanes benchmark runs every -lanes value on")
	flag.StringVar(&o.queueCostBench, "queuecost-bench", bench.DefaultQueueCostPattern, "regexp of the Go benchmarks of ./activities the queuecost benchmark runs")
	flag.IntVar(&o.queueCostDemo, "queuecost-demo-steps", 20, "steps each queuecost benchmark measures on the demo-sized repository")
	flag.IntVar(&o.queueCostBig, "queuecost-large-steps", 5, "steps each queuecost benchmark measures on the 10,000-file, 100 MB repository")
	flag.IntVar(&o.warmMerges, "warmverify-merges", 5, "warm merges the warm-verifies benchmark measures after its cold one")
	flag.IntVar(&o.warmTasks, "warmcampaign-tasks", 6, "tasks of the warm-verifies campaign (each merged by a verify of its own; the first is cold)")
	flag.StringVar(&o.agentKinds, "agents", "builtin,claude-code,codex,opencode", "RALPH_AGENT values the agents benchmark measures")
	flag.StringVar(&o.agentCLIDir, "agents-cli-dir", "/opt/ralph-agents/node_modules/.bin", "where the agent CLIs are (scripts/install-agent-clis.sh)")
	flag.StringVar(&o.workerEnv, "worker-env", "", "comma-separated KEY=VALUE worker settings applied to every benchmark's workers (e.g. RALPH_MODEL_STREAM=off)")
	flag.StringVar(&o.overheadOff, "overhead-off", "", "comma-separated features the overhead benchmark turns off, to see what each costs: "+strings.Join(bench.OverheadFeatures, ","))
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the in-process workers, the scripted model, the clients; not the servers) here")
	flag.Parse()
	return o
}

// check reads the list flags and the benchmark names; its error names the
// flag that is wrong.
func (o *options) check() error {
	o.want = map[string]bool{}
	for _, s := range strings.Split(o.only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if group, ok := groups[s]; ok {
			for _, g := range group {
				o.want[g] = true
			}
			continue
		}
		if !contains(allSections, s) && !contains(extraSections, s) {
			return fmt.Errorf("unknown benchmark %q (have %s, section41)", s, strings.Join(append(allSections, extraSections...), ","))
		}
		o.want[s] = true
	}
	if o.lanesTasks < 1 {
		return fmt.Errorf("-lanes-tasks %d: must be at least 1", o.lanesTasks)
	}
	if o.warmTasks < 2 {
		return fmt.Errorf("-warmcampaign-tasks %d: must be at least 2 (the first merge is cold)", o.warmTasks)
	}
	if o.queueCostDemo < 1 || o.queueCostBig < 1 {
		return fmt.Errorf("-queuecost-demo-steps %d, -queuecost-large-steps %d: each must be at least 1", o.queueCostDemo, o.queueCostBig)
	}
	for _, l := range []struct {
		flag string
		in   string
		out  *[]int
	}{{"-scale-runs", o.scaleRuns, &o.runsList}, {"-scale-concurrent-rounds", o.scaleSlots, &o.slotsList}, {"-crash-heartbeat-timeouts", o.crashHB, &o.hbList},
		{"-lanes", o.mergeLanes, &o.lanesList}, {"-lanes-workers", o.lanesWorkers, &o.workersList}} {
		list, err := ints(l.in)
		if err != nil {
			return fmt.Errorf("%s: %w", l.flag, err)
		}
		*l.out = list
	}
	settings, err := keyValues(o.workerEnv)
	if err != nil {
		return fmt.Errorf("-worker-env: %w", err)
	}
	o.settings = settings
	for _, f := range strings.Split(o.overheadOff, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if !contains(bench.OverheadFeatures, f) {
			return fmt.Errorf("-overhead-off: unknown feature %q (have %s)", f, strings.Join(bench.OverheadFeatures, ","))
		}
		o.off = append(o.off, f)
	}
	if o.withCluster && o.clusterAddr != "" {
		return errors.New("-cluster and -with-cluster exclude each other")
	}
	return nil
}

func run() int {
	o := parseFlags()
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench:", err)
		return 2
	}
	// SIGINT/SIGTERM end the run cleanly: workers and the dev server stop.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, o.timeout)
	defer cancel()
	began := time.Now()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ralphbench: -cpuprofile:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "ralphbench: -cpuprofile:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}

	s := &stack{progress: os.Stderr}
	defer s.close()
	if err := s.start(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "ralphbench:", err)
		return 1
	}
	var doc strings.Builder
	fmt.Fprintf(&doc, "# Ralph benchmark run\n\n%s\n\n", environment(ctx, s.h))
	flagLine := "flags: " + strings.Join(os.Args[1:], " ")
	if len(os.Args) == 1 {
		flagLine = "flags: (defaults)"
	}
	fmt.Fprintf(&doc, "%s\n\n", flagLine)
	fmt.Println(doc.String())

	failed := s.runSteps(ctx, o, &doc)
	total := fmt.Sprintf("Whole run: %s.\n", time.Since(began).Round(time.Second))
	fmt.Println(total)
	doc.WriteString(total)

	path := o.mdPath
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

// stack is what the benchmarks run on: the temp dir, the worker binary, the
// dev server and, when asked for, the PostgreSQL-backed cluster.
type stack struct {
	progress      io.Writer
	closers       []func() // run in reverse by close
	h             *bench.Harness
	dev           *temporalserver.Server
	serverRestart func(context.Context) error
	dbSize        func(context.Context) (int64, error)
}

// onClose adds f to what close undoes, last added first.
func (s *stack) onClose(f func()) { s.closers = append(s.closers, f) }

func (s *stack) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// start readies the stack step by step: temp dir and log, worker binary,
// dev server, cluster.
func (s *stack) start(ctx context.Context, o options) error {
	dir, err := s.tempDir(o.keep)
	if err != nil {
		return err
	}
	bin, err := s.workerBinary(ctx, o, dir)
	if err != nil {
		return err
	}
	if err := s.startDev(ctx, dir, bin); err != nil {
		return err
	}
	s.h.Settings = o.settings
	return s.startCluster(ctx, o)
}

// tempDir makes the run's temp dir; the in-process worker's own logs
// (slog) go to a file in it, not into the tables.
func (s *stack) tempDir(keep bool) (string, error) {
	dir, err := os.MkdirTemp("", "ralphbench-")
	if err != nil {
		return "", err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "ralphbench: keeping", dir)
	} else {
		s.onClose(func() { os.RemoveAll(dir) })
	}
	logFile, err := os.Create(filepath.Join(dir, "inproc.log"))
	if err != nil {
		return "", err
	}
	s.onClose(func() { logFile.Close() })
	slog.SetDefault(slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelWarn})))
	return dir, nil
}

// workerBinary is -worker-bin, or ./worker built into dir.
func (s *stack) workerBinary(ctx context.Context, o options, dir string) (string, error) {
	if o.workerBin != "" {
		return o.workerBin, nil
	}
	bin := filepath.Join(dir, "worker")
	fmt.Fprintln(s.progress, "ralphbench: go build ./worker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./worker")
	cmd.Dir = o.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the worker: %v\n%s", err, out)
	}
	return bin, nil
}

func (s *stack) startDev(ctx context.Context, dir, bin string) error {
	fmt.Fprintln(s.progress, "ralphbench: starting the Temporal dev server")
	dev, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{DBFile: filepath.Join(dir, "temporal.db"), Output: io.Discard})
	if err != nil {
		return err
	}
	s.onClose(func() { dev.Stop() })
	s.dev = dev
	devClient, err := dev.Dial(ctx, client.Options{})
	if err != nil {
		return fmt.Errorf("dial the dev server: %w", err)
	}
	s.onClose(devClient.Close)
	s.h = &bench.Harness{
		Dir:       dir,
		WorkerBin: bin,
		Dev:       bench.Target{Name: "dev server", Address: dev.Address, Namespace: dev.Namespace, Client: devClient},
		DevPID:    dev.PID(),
		Progress:  s.progress,
		Tag:       strconv.FormatInt(time.Now().Unix()%1_000_000, 36),
	}
	return nil
}

// startCluster starts the PostgreSQL-backed cluster (-with-cluster) or
// dials the one at -cluster, if either is asked for.
func (s *stack) startCluster(ctx context.Context, o options) error {
	addr, ns := o.clusterAddr, o.clusterNS
	if o.withCluster {
		fmt.Fprintln(s.progress, "ralphbench: starting the PostgreSQL-backed cluster")
		cl, err := temporalserver.StartCluster(ctx, temporalserver.ClusterOptions{})
		if err != nil {
			return err
		}
		s.onClose(func() { cl.Stop() })
		addr, ns = cl.Address, cl.Namespace
		s.serverRestart = cl.Restart
		s.dbSize = func(ctx context.Context) (int64, error) { return postgresSize(ctx, cl.PostgresURL) }
	}
	if addr == "" {
		return nil
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: ns, Logger: temporalserver.QuietLogger{}})
	if err != nil {
		return fmt.Errorf("dial the cluster at %s: %w", addr, err)
	}
	s.onClose(c.Close)
	s.h.Cluster = &bench.Target{Name: "PostgreSQL server", Address: addr, Namespace: ns, Client: c}
	return nil
}

// step is one benchmark: its name in -only, the command that runs it
// alone, and the run.
type step struct {
	name string
	cmd  string
	run  func() (bench.Section, error)
}

func benchCommand(name string, extra string) string {
	c := "scripts/bench.sh -only " + name
	if extra != "" {
		c += " " + extra
	}
	return c
}

// steps are every benchmark, in the order they run.
func (s *stack) steps(ctx context.Context, o options) []step {
	h := s.h
	overheadCmd := benchCommand("overhead", fmt.Sprintf("-overhead-rounds %d -overhead-reps %d", o.rounds, o.reps))
	if len(o.off) > 0 {
		overheadCmd += " -overhead-off " + strings.Join(o.off, ",")
	}
	if h.Cluster != nil {
		overheadCmd += " -with-cluster"
	}
	return []step{
		{"overhead", overheadCmd, func() (bench.Section, error) {
			return h.Overhead(ctx, bench.OverheadConfig{Rounds: o.rounds, Reps: o.reps, Off: o.off})
		}},
		{"scale", benchCommand("scale", fmt.Sprintf("-scale-runs %s -scale-concurrent-rounds %s -scale-rounds %d -scale-latency %s", o.scaleRuns, o.scaleSlots, o.scaleRounds, o.scaleLatency)),
			func() (bench.Section, error) {
				return h.Scale(ctx, bench.ScaleConfig{Runs: o.runsList, ConcurrentRounds: o.slotsList, Rounds: o.scaleRounds, Latency: o.scaleLatency})
			}},
		{"cancel", benchCommand("cancel", fmt.Sprintf("-cancel-samples %d", o.cancelN)), func() (bench.Section, error) {
			return h.Cancel(ctx, bench.CancelConfig{Samples: o.cancelN})
		}},
		{"crash", benchCommand("crash", fmt.Sprintf("-crash-samples %d -crash-heartbeat-timeouts %s", o.crashN, o.crashHB)), func() (bench.Section, error) {
			return h.Crash(ctx, bench.CrashConfig{Samples: o.crashN, HeartbeatTimeouts: o.hbList})
		}},
		{"prompt", benchCommand("prompt", ""), func() (bench.Section, error) { return h.Prompt(ctx) }},
		{"history", benchCommand("history", ""), func() (bench.Section, error) { return h.History(ctx) }},
		{"ratelimit", benchCommand("ratelimit", fmt.Sprintf("-ratelimit-runs %d -ratelimit-window %s -ratelimit-before-bin <worker built from the earlier commit>", o.rlRuns, o.rlWindow)),
			func() (bench.Section, error) {
				var workers []bench.LabelledWorker
				if o.rlBefore != "" {
					workers = append(workers, bench.LabelledWorker{Label: "before: " + o.rlBefore, Bin: o.rlBefore})
				}
				workers = append(workers, bench.LabelledWorker{Label: "after: this build"})
				return h.RateLimit(ctx, bench.RateLimitConfig{Runs: o.rlRuns, Window: o.rlWindow, Workers: workers})
			}},
		{"churn", benchCommand("churn", fmt.Sprintf("-churn-runs %d -churn-rounds %d -churn-workers %d -churn-latency %s -churn-throughput-runs %d -with-cluster",
			o.churnRuns, o.churnRounds, o.churnWorkers, o.churnLatency, o.churnSeries)), func() (bench.Section, error) {
			restart := s.serverRestart
			if h.Cluster == nil {
				restart = s.dev.Restart
			}
			return h.ChurnSection(ctx, bench.ChurnSectionConfig{ThroughputRuns: o.churnSeries, ChurnConfig: bench.ChurnConfig{
				Runs: o.churnRuns, Rounds: o.churnRounds, Workers: o.churnWorkers, Latency: o.churnLatency,
				RollingRestart: true, Kill: true, ServerRestart: restart, DBSize: s.dbSize,
			}})
		}},
		{"agents", benchCommand("agents", fmt.Sprintf("-agents-rounds %d -agents %s", o.agentRounds, o.agentKinds)), func() (bench.Section, error) {
			return h.Agents(ctx, bench.AgentsConfig{Rounds: o.agentRounds, Kinds: strings.Split(o.agentKinds, ","), CLIDir: o.agentCLIDir})
		}},
		{"campaign", benchCommand("campaign", fmt.Sprintf("-campaign-tasks %d", o.campaignTasks)), func() (bench.Section, error) {
			return h.Campaign(ctx, bench.CampaignConfig{Tasks: o.campaignTasks, Parallel: []int{1, 2, 4}})
		}},
		{"lanes", benchCommand("lanes", fmt.Sprintf("-lanes %s -lanes-workers %s -lanes-tasks %d -lanes-loop %s -lanes-verify '%s'", o.mergeLanes, o.lanesWorkers, o.lanesTasks, o.lanesLoop, o.lanesVerify)),
			func() (bench.Section, error) {
				return h.Lanes(ctx, bench.LanesConfig{Tasks: o.lanesTasks, Loop: o.lanesLoop, Verify: o.lanesVerify, Parallel: 8, Lanes: o.lanesList, Workers: o.workersList})
			}},
		{"queuecost", benchCommand("queuecost", fmt.Sprintf("-queuecost-bench '%s' -queuecost-demo-steps %d -queuecost-large-steps %d", o.queueCostBench, o.queueCostDemo, o.queueCostBig)),
			func() (bench.Section, error) {
				return h.QueueCost(ctx, bench.QueueCostConfig{Repo: o.repo, Pattern: o.queueCostBench, DemoIters: o.queueCostDemo, LargeIters: o.queueCostBig})
			}},
		{"warmverify", benchCommand("warmverify", fmt.Sprintf("-warmverify-merges %d", o.warmMerges)), func() (bench.Section, error) {
			return h.WarmVerify(ctx, bench.WarmVerifyConfig{Repo: o.repo, Merges: o.warmMerges, Command: bench.DefaultWarmVerifyCommand, File: "report/report.go"})
		}},
		{"warmcampaign", benchCommand("warmcampaign", fmt.Sprintf("-warmcampaign-tasks %d", o.warmTasks)), func() (bench.Section, error) {
			return h.WarmCampaign(ctx, bench.WarmCampaignConfig{Repo: o.repo, Tasks: o.warmTasks, Parallel: 2, Command: bench.DefaultWarmVerifyCommand})
		}},
		{"candidates", benchCommand("candidates", ""), func() (bench.Section, error) {
			return h.Candidates(ctx, bench.CandidatesConfig{Rounds: 4, Runs: 5, Counts: []int{1, 3}})
		}},
		{"encryption", benchCommand("encryption", fmt.Sprintf("-overhead-rounds %d -overhead-reps %d", o.rounds, o.reps)), func() (bench.Section, error) {
			return h.Encryption(ctx, bench.EncryptionConfig{Rounds: o.rounds, Reps: o.reps})
		}},
	}
}

// runSteps runs the benchmarks named in -only and appends each section to
// doc, then every goal they were judged on; it reports whether any could
// not run.
func (s *stack) runSteps(ctx context.Context, o options, doc *strings.Builder) (failed bool) {
	var secs []bench.Section
	defer func() {
		if md := goalsSummary(secs); md != "" {
			fmt.Println(md)
			doc.WriteString(md)
		}
	}()
	for _, st := range s.steps(ctx, o) {
		if !o.want[st.name] {
			continue
		}
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "ralphbench: %s skipped: %v\n", st.name, ctx.Err())
			secs = append(secs, bench.Section{Title: st.name, Notes: []string{"skipped: " + ctx.Err().Error()}})
			failed = true
			continue
		}
		t0 := time.Now()
		sec, err := st.run()
		if sec.Title == "" {
			sec.Title = st.name
		}
		sec.Command = st.cmd
		if err != nil {
			failed = true
			sec.Notes = append(sec.Notes, "**benchmark failed:** "+err.Error())
			fmt.Fprintf(os.Stderr, "ralphbench: %s failed: %v\n", st.name, err)
		}
		sec.Notes = append(sec.Notes, fmt.Sprintf("This benchmark took %s; load average (1, 5 min) after it: %s.", time.Since(t0).Round(time.Second), loadAvg()))
		md := sec.Markdown()
		fmt.Println(md)
		doc.WriteString(md)
		secs = append(secs, sec)
	}
	return failed
}

// goalsSummary is one table of every goal the run's benchmarks were judged
// on, and the benchmarks that failed or were skipped; empty when no
// benchmark has a goal.
func goalsSummary(secs []bench.Section) string {
	tbl := bench.GoalsTable(secs)
	if len(tbl.Rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Goals\n\nEach verdict is computed from this run's numbers above.\n\n")
	b.WriteString(tbl.Markdown())
	for _, sec := range secs {
		for _, n := range sec.Notes {
			if strings.HasPrefix(n, "**benchmark failed:**") || strings.HasPrefix(n, "skipped: ") {
				first, _, _ := strings.Cut(n, "\n") // the section above has the rest
				fmt.Fprintf(&b, "\n- %s: %s", sec.Title, first)
			}
		}
	}
	b.WriteString("\n\n")
	return b.String()
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
