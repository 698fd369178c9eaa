package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sashabaranov/go-openai"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

// ChurnConfig sizes the load-and-churn scenario: many runs across several
// real worker processes on one task queue with one shared workspace root
// (the shared volume of a multi-worker deployment), while every worker is
// restarted in turn, one is killed with SIGKILL and the Temporal server is
// restarted.
type ChurnConfig struct {
	Runs    int           // runs started at once
	Rounds  int           // rounds per run (the last one completes)
	Workers int           // worker processes
	Latency time.Duration // the scripted model's delay per call
	// RollingRestart, Kill and ServerRestart turn the disruptions on; each
	// fires once the given share of all rounds has been served.
	RollingRestart, Kill bool
	ServerRestart        func(ctx context.Context) error
	// DBSize, when set, reads the server database's size in bytes.
	DBSize func(ctx context.Context) (int64, error)
	// ConcurrentRounds is each worker's RALPH_CONCURRENT_ROUNDS (0: default).
	ConcurrentRounds int
}

// ChurnResult is what one churn run measured and found.
type ChurnResult struct {
	Runs, Rounds, Workers int
	Wall                  time.Duration
	// Problems lists every check that failed, one line each (empty: every run
	// completed exactly once with the expected report, files and usage).
	Problems []string
	// Dispatch: previous round's ActivityTaskCompleted → the next round's
	// first model request.
	Dispatch []time.Duration
	// RSSPerRunKiB: (peak − idle RSS) summed over workers / open runs.
	RSSPerRunKiB float64
	// EventsPerRound and BytesPerRound: the server's history accounting.
	EventsPerRound, BytesPerRound float64
	DBBytesPer1000Rounds          float64
	// KillRecovery: SIGKILL → each retried round (attempt > 1 started
	// after the kill) completed. ServerRecovery: restart began → the server
	// serving again, and → the first round completed after it.
	KillRecovery                     []time.Duration
	ServerDown, ServerFirstRound     time.Duration
	Retried, ServedRequests, Orphans int
	// DeliveredAnswers: answers the model wrote to a connected worker.
	// InFlightRuns / InFlightAnswers: runs whose usage misses answers that a
	// killed attempt received before its usage heartbeat went out (at most
	// one per lost attempt, else it is a problem).
	DeliveredAnswers, InFlightRuns, InFlightAnswers int
	Events                                          []string
}

// churnKey finds the run's key in its objective.
var churnKey = regexp.MustCompile(`churn run ([A-Za-z0-9-]+)`)

// churnUsage is what the scripted model reports for every answer, so the
// usage a run should show is a count of answers times these.
const churnPromptTokens, churnCompletionTokens = 100, 10

// churnModel: step 0 writes the round's file with a real command (its text
// carries the run's key, so orphaned commands can be found in /proc), step 1
// submits the report. It counts per run the requests it received and the
// answers it delivered, and when each round's first request arrived.
type churnModel struct {
	rounds  int
	latency time.Duration
	marker  string

	mu        sync.Mutex
	delivered map[string]int               // run key → answers delivered to a connected worker
	first     map[string]map[int]time.Time // run key → round → first step-0 arrival
	total     atomic.Int64
	done      atomic.Int64 // submit_report answers served
}

func (m *churnModel) rule(req fakeopenai.Request) fakeopenai.Response {
	key := ""
	if match := churnKey.FindStringSubmatch(req.Prompt()); match != nil {
		key = match[1]
	}
	round := req.Round()
	m.mu.Lock()
	if req.Step() == 0 {
		if m.first[key] == nil {
			m.first[key] = map[int]time.Time{}
		}
		if _, ok := m.first[key][round]; !ok {
			m.first[key][round] = time.Now()
		}
	}
	m.mu.Unlock()
	m.total.Add(1)
	var r fakeopenai.Response
	switch {
	case req.Step() == 0:
		// The file names the run, so a file written into another run's
		// workspace is found.
		r = toolCall("run_command", map[string]any{"command": fmt.Sprintf(
			"echo '%s %s' >> round-%d.txt # %s", key, strconv.Itoa(round), round, m.marker)})
	case round < m.rounds:
		m.done.Add(1)
		r = submitContinue(fmt.Sprintf("churn run %s round %d", key, round))
	default:
		m.done.Add(1)
		r = submitComplete(fmt.Sprintf("churn run %s done", key))
	}
	r.Usage = &openai.Usage{PromptTokens: churnPromptTokens, CompletionTokens: churnCompletionTokens, TotalTokens: churnPromptTokens + churnCompletionTokens}
	r.Delay = m.latency
	return r
}

func (m *churnModel) deliver(req fakeopenai.Request, _ fakeopenai.Response) {
	key := ""
	if match := churnKey.FindStringSubmatch(req.Prompt()); match != nil {
		key = match[1]
	}
	m.mu.Lock()
	m.delivered[key]++
	m.mu.Unlock()
}

// Churn runs the scenario on t and checks every run; measurement problems
// are returned as an error, failed checks in ChurnResult.Problems. Its steps:
// start the model and the workers, start every run at once, disrupt (rolling
// restart, kill, server restart) while sampling memory, then analyse the
// results, the workspaces and the histories.
func (h *Harness) Churn(ctx context.Context, t Target, cfg ChurnConfig) (*ChurnResult, error) {
	c, err := h.startChurn(ctx, t, cfg)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	runs := c.startRuns(ctx)
	disrupted := make(chan error, 1)
	go func() { disrupted <- c.disrupt(ctx) }()
	sampling, stopSampling := context.WithCancel(ctx)
	go c.sample(sampling)
	runs.Wait()
	c.res.Wall = time.Since(c.began)
	stopSampling()
	if err := <-disrupted; err != nil {
		return nil, err
	}
	return c.analyse(ctx)
}

// churnRun is one churn scenario under way: its model and workers, its
// runs, and what it has measured so far.
type churnRun struct {
	h     *Harness
	t     Target
	cfg   ChurnConfig
	m     *churnModel
	model *fakeopenai.Server
	queue string
	extra map[string]string // the workers' extra environment
	res   *ChurnResult
	began time.Time

	wmu     sync.Mutex // guards workers against the sampler
	workers []*WorkerProc
	idle    []int64 // each worker's RSS before the runs
	db0     int64   // the database's size before the runs

	ids, runIDs []string
	results     []workflows.Result
	errs        []error

	peakRSS, peakOpen          atomic.Int64
	killAt, serverAt, serverUp time.Time
}

// startChurn starts the scripted model and the workers, and reads what the
// measures start from (idle memory, database size).
func (h *Harness) startChurn(ctx context.Context, t Target, cfg ChurnConfig) (_ *churnRun, err error) {
	tag := h.name("churn")
	m := &churnModel{rounds: cfg.Rounds, latency: cfg.Latency, marker: "churn-cmd-" + tag,
		delivered: map[string]int{}, first: map[string]map[int]time.Time{}}
	c := &churnRun{h: h, t: t, cfg: cfg, m: m, queue: tag, extra: map[string]string{},
		model: fakeopenai.NewServer(fakeopenai.Script{Rule: m.rule, Delivered: m.deliver}),
		res:   &ChurnResult{Runs: cfg.Runs, Rounds: cfg.Runs * cfg.Rounds, Workers: cfg.Workers}}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if cfg.ConcurrentRounds > 0 {
		c.extra["RALPH_CONCURRENT_ROUNDS"] = strconv.Itoa(cfg.ConcurrentRounds)
	}
	for i := range cfg.Workers {
		w, err := c.startWorker(ctx)
		if err != nil {
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		c.workers = append(c.workers, w)
	}
	for _, w := range c.workers {
		rss, _, _ := w.Memory()
		c.idle = append(c.idle, rss)
	}
	if cfg.DBSize != nil {
		if c.db0, err = cfg.DBSize(ctx); err != nil {
			return nil, fmt.Errorf("database size: %w", err)
		}
	}
	return c, nil
}

func (c *churnRun) startWorker(ctx context.Context) (*WorkerProc, error) {
	return c.h.StartWorkerProc(ctx, c.t, c.queue, c.model.BaseURL(), c.extra)
}

// stop stops every worker, then the model.
func (c *churnRun) stop() {
	c.wmu.Lock()
	for _, w := range c.workers {
		w.Stop()
	}
	c.wmu.Unlock()
	c.model.Close()
}

// replace swaps worker i for w (the sampler reads workers meanwhile).
func (c *churnRun) replace(i int, w *WorkerProc) {
	c.wmu.Lock()
	c.workers[i] = w
	c.wmu.Unlock()
}

func (c *churnRun) logEvent(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	c.res.Events = append(c.res.Events, line)
	c.h.logf("churn: %s", line)
}

// startRuns starts every run at once; the WaitGroup is done when all have
// ended (Get follows a run through worker and server restarts).
func (c *churnRun) startRuns(ctx context.Context) *sync.WaitGroup {
	n := c.cfg.Runs
	c.ids, c.runIDs, c.results, c.errs = make([]string, n), make([]string, n), make([]workflows.Result, n), make([]error, n)
	c.began = time.Now()
	var wg sync.WaitGroup
	for i := range n {
		c.ids[i] = fmt.Sprintf("%s-run-%d", c.queue, i)
		wg.Go(func() {
			run, err := StartRalph(ctx, c.t, c.queue, c.ids[i], ralphInput{
				Objective: fmt.Sprintf("churn run %s: write one file per round", c.ids[i]), MaxRounds: c.cfg.Rounds,
			})
			if err != nil {
				c.errs[i] = err
				return
			}
			c.runIDs[i] = run.GetRunID()
			c.errs[i] = run.Get(ctx, &c.results[i])
		})
	}
	return &wg
}

// disrupt runs the configured disruptions in turn, each once its share of
// all rounds has been served.
func (c *churnRun) disrupt(ctx context.Context) error {
	c.sampleRSS()
	if c.cfg.RollingRestart {
		if err := c.rollingRestart(ctx); err != nil {
			return err
		}
	}
	if c.cfg.Kill {
		if err := c.kill(ctx); err != nil {
			return err
		}
	}
	if c.cfg.ServerRestart != nil {
		return c.restartServer(ctx)
	}
	return nil
}

// rollingRestart stops each worker with SIGTERM and starts its successor,
// one after the other, from 15 % of the rounds on.
func (c *churnRun) rollingRestart(ctx context.Context) error {
	if err := c.waitShare(ctx, 0.15); err != nil {
		return err
	}
	for i := range c.workers {
		c.sampleRSS()
		c.logEvent("%s: SIGTERM worker %d (pid %d), %s rounds served", since(c.began), i, c.workers[i].Pid, c.served())
		c.wmu.Lock()
		c.workers[i].Stop()
		c.wmu.Unlock()
		w, err := c.startWorker(ctx)
		if err != nil {
			return fmt.Errorf("restart worker %d: %w", i, err)
		}
		c.replace(i, w)
		c.logEvent("%s: worker %d back (pid %d)", since(c.began), i, w.Pid)
	}
	return nil
}

// kill kills worker 0 with SIGKILL at 45 % of the rounds and replaces it.
func (c *churnRun) kill(ctx context.Context) error {
	if err := c.waitShare(ctx, 0.45); err != nil {
		return err
	}
	c.sampleRSS()
	c.wmu.Lock()
	victim := c.workers[0]
	c.killAt = time.Now()
	victim.Kill()
	c.wmu.Unlock()
	c.logEvent("%s: SIGKILL worker 0 (pid %d), %s rounds served", since(c.began), victim.Pid, c.served())
	w, err := c.startWorker(ctx)
	if err != nil {
		return fmt.Errorf("replace killed worker: %w", err)
	}
	c.replace(0, w)
	return nil
}

// restartServer restarts the Temporal server at 70 % of the rounds.
func (c *churnRun) restartServer(ctx context.Context) error {
	if err := c.waitShare(ctx, 0.7); err != nil {
		return err
	}
	c.sampleRSS()
	c.serverAt = time.Now()
	c.logEvent("%s: restarting the Temporal server, %s rounds served", since(c.began), c.served())
	if err := c.cfg.ServerRestart(ctx); err != nil {
		return fmt.Errorf("server restart: %w", err)
	}
	c.serverUp = time.Now()
	c.logEvent("%s: Temporal server serving again after %s", since(c.began), c.serverUp.Sub(c.serverAt).Round(time.Millisecond))
	return nil
}

func (c *churnRun) totalRounds() int64 { return int64(c.cfg.Runs * c.cfg.Rounds) }

// served is "n/total" of the rounds the model has ended with a report.
func (c *churnRun) served() string {
	return fmt.Sprintf("%d/%d", c.m.done.Load(), c.totalRounds())
}

// waitShare waits until share of all rounds has been served.
func (c *churnRun) waitShare(ctx context.Context, share float64) error {
	want := int64(share * float64(c.totalRounds()))
	return wait.Until(ctx, 20*time.Millisecond, func(context.Context) error {
		if n := c.m.done.Load(); n < want {
			return fmt.Errorf("%d of %d rounds served, waiting for %d", n, c.totalRounds(), want)
		}
		return nil
	})
}

// sample records the workers' peak memory and the peak of open runs every
// 500 ms until ctx ends.
func (c *churnRun) sample(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
			c.sampleRSS()
			if open := int64(c.cfg.Runs) - c.m.done.Load()/int64(c.cfg.Rounds); open > c.peakOpen.Load() {
				c.peakOpen.Store(open)
			}
		}
	}
}

// sampleRSS records the workers' summed RSS if it is a new peak.
func (c *churnRun) sampleRSS() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var sum int64
	for _, w := range c.workers {
		rss, _, _ := w.Memory()
		sum += rss
	}
	if sum > c.peakRSS.Load() {
		c.peakRSS.Store(sum)
	}
}

// analyse checks every run (result, workspace, orphans, visibility) and
// derives the measures from the histories.
func (c *churnRun) analyse(ctx context.Context) (*ChurnResult, error) {
	res := c.res
	res.ServedRequests = int(c.m.total.Load())
	c.m.mu.Lock()
	for _, n := range c.m.delivered {
		res.DeliveredAnswers += n
	}
	c.m.mu.Unlock()
	c.checkResults()
	res.Problems = append(res.Problems, c.h.checkChurnWorkspaces(c.workers[0].Root, c.ids, c.cfg.Rounds)...)
	res.Orphans = len(processesWith(c.m.marker))
	if res.Orphans > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d command processes outlived their rounds", res.Orphans))
	}
	if err := c.checkVisibility(ctx); err != nil {
		return nil, err
	}
	if err := c.measureHistories(ctx); err != nil {
		return nil, err
	}
	if err := c.measureResources(ctx); err != nil {
		return nil, err
	}
	sort.Strings(res.Problems)
	return res, nil
}

// checkResults: every run completed after all its rounds with the expected
// final report.
func (c *churnRun) checkResults() {
	for i, id := range c.ids {
		r := c.results[i]
		switch {
		case c.errs[i] != nil:
			c.problem("%s: %v", id, c.errs[i])
		case r.Status != report.StatusComplete || r.RoundsStarted != c.cfg.Rounds:
			c.problem("%s: status %q after %d rounds, want complete after %d", id, r.Status, r.RoundsStarted, c.cfg.Rounds)
		case r.Report == nil || r.Report.Summary != fmt.Sprintf("churn run %s done", id):
			c.problem("%s: unexpected final report %+v", id, r.Report)
		}
	}
}

func (c *churnRun) problem(format string, args ...any) {
	c.res.Problems = append(c.res.Problems, fmt.Sprintf(format, args...))
}

// checkVisibility: exactly once, and nothing left open, as the server sees it.
func (c *churnRun) checkVisibility(ctx context.Context) error {
	runs := int64(c.cfg.Runs)
	for _, q := range []struct {
		query string
		want  int64
	}{
		{fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", c.queue), 0},
		{fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Completed'", c.queue), runs},
		{fmt.Sprintf("TaskQueue = '%s'", c.queue), runs},
	} {
		n, err := countWorkflows(ctx, c.t, q.query, q.want)
		if err != nil {
			return err
		}
		if n != q.want {
			c.problem("visibility: %d runs match %q, want %d", n, q.query, q.want)
		}
	}
	return nil
}

// measureHistories reads every completed run's history chain: its size,
// the dispatch delays, the retried rounds and the recoveries, and checks
// its usage against what the model delivered.
func (c *churnRun) measureHistories(ctx context.Context) error {
	var events, bytes int64
	for i, id := range c.ids {
		if c.errs[i] != nil {
			continue
		}
		chain, err := Chain(ctx, c.t, id, c.runIDs[i])
		if err != nil {
			return err
		}
		for _, rh := range chain {
			events += rh.Length
			bytes += rh.SizeBytes
		}
		rt := Timing(chain, activities.RunRoundName)
		c.m.mu.Lock()
		first, delivered := c.m.first[id], c.m.delivered[id]
		c.m.mu.Unlock()
		c.measureDispatch(rt, first)
		lost := c.measureRetries(chain)
		c.checkUsage(id, c.results[i].Usage, delivered, lost)
		c.measureServerRecovery(rt)
	}
	if c.res.Rounds > 0 {
		c.res.EventsPerRound = float64(events) / float64(c.res.Rounds)
		c.res.BytesPerRound = float64(bytes) / float64(c.res.Rounds)
	}
	if !c.serverAt.IsZero() {
		c.res.ServerDown = c.serverUp.Sub(c.serverAt)
	}
	return nil
}

// measureDispatch: each round's first model request after the previous
// round's completion.
func (c *churnRun) measureDispatch(rt RoundTimes, first map[int]time.Time) {
	for r := 1; r < len(rt.Completed); r++ {
		if at, ok := first[r+1]; ok && !rt.Completed[r-1].IsZero() {
			c.res.Dispatch = append(c.res.Dispatch, at.Sub(rt.Completed[r-1]))
		}
	}
}

// measureRetries counts a run's retried rounds and times the recovery of
// those started after the kill; it returns the run's lost attempts.
func (c *churnRun) measureRetries(chain []RunHistory) int {
	lost := 0
	for _, rh := range chain {
		for _, ev := range rh.Events {
			a := ev.GetActivityTaskStartedEventAttributes()
			if a == nil || a.GetAttempt() < 2 {
				continue
			}
			c.res.Retried++
			lost += int(a.GetAttempt()) - 1 // the Started event carries the last attempt
			if !c.killAt.IsZero() && ev.GetEventTime().AsTime().After(c.killAt) {
				if done := completedAfter(rh, a.GetScheduledEventId()); !done.IsZero() {
					c.res.KillRecovery = append(c.res.KillRecovery, done.Sub(c.killAt))
				}
			}
		}
	}
	return lost
}

// checkUsage: usage counts every answer delivered, every attempt included,
// except at most the one answer an attempt received as its worker was
// killed, before that answer's heartbeat (activities.UsageHeartbeatDelay)
// reached the server: nothing can count what a killed process read.
func (c *churnRun) checkUsage(id string, u usage.Usage, delivered, lost int) {
	switch calls := u.ModelCalls; {
	case u.PromptTokens != calls*churnPromptTokens || u.CompletionTokens != calls*churnCompletionTokens:
		c.problem("%s: usage %d calls but %d+%d tokens, want %d+%d per call",
			id, calls, u.PromptTokens, u.CompletionTokens, churnPromptTokens, churnCompletionTokens)
	case calls > delivered:
		c.problem("%s: usage counts %d model calls, the model delivered %d answers", id, calls, delivered)
	case calls < delivered-lost:
		c.problem("%s: usage counts %d model calls, the model delivered %d answers: more lost than one answer in flight for each of its %d lost attempts",
			id, calls, delivered, lost)
	case calls < delivered:
		c.res.InFlightRuns++
		c.res.InFlightAnswers += delivered - calls
	}
}

// measureServerRecovery keeps the earliest round completed after the
// server restart began.
func (c *churnRun) measureServerRecovery(rt RoundTimes) {
	if c.serverAt.IsZero() {
		return
	}
	for _, done := range rt.Completed {
		if d := done.Sub(c.serverAt); done.After(c.serverAt) && (c.res.ServerFirstRound == 0 || d < c.res.ServerFirstRound) {
			c.res.ServerFirstRound = d
		}
	}
}

// measureResources: worker memory per open run and database growth.
func (c *churnRun) measureResources(ctx context.Context) error {
	var idle int64
	for _, v := range c.idle {
		idle += v
	}
	if open := c.peakOpen.Load(); open > 0 {
		c.res.RSSPerRunKiB = float64(c.peakRSS.Load()-idle) / float64(open)
	}
	if c.cfg.DBSize == nil {
		return nil
	}
	db1, err := c.cfg.DBSize(ctx)
	if err != nil {
		return fmt.Errorf("database size: %w", err)
	}
	c.res.DBBytesPer1000Rounds = float64(db1-c.db0) * 1000 / float64(c.res.Rounds)
	return nil
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// completedAfter is when the activity scheduled as scheduledID completed in
// rh (zero if it did not).
func completedAfter(rh RunHistory, scheduledID int64) time.Time {
	for _, ev := range rh.Events {
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && a.GetScheduledEventId() == scheduledID {
			return ev.GetEventTime().AsTime()
		}
	}
	return time.Time{}
}

// checkChurnWorkspaces: every run's workspace holds exactly its own round
// files, each round's line once; no other workspace exists.
func (h *Harness) checkChurnWorkspaces(root string, ids []string, rounds int) []string {
	var problems []string
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
		ws := filepath.Join(root, id)
		for r := 1; r <= rounds; r++ {
			data, err := os.ReadFile(filepath.Join(ws, fmt.Sprintf("round-%d.txt", r)))
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: round %d's file: %v", id, r, err))
				continue
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			line := fmt.Sprintf("%s %d", id, r)
			// A round retried after a kill may write its line again (the lost
			// attempt's command ran); another run's line never appears.
			for _, l := range lines {
				if l != line {
					problems = append(problems, fmt.Sprintf("%s: round %d's file holds %q: another run wrote here", id, r, l))
				}
			}
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return append(problems, err.Error())
	}
	for _, e := range entries {
		if !want[e.Name()] && !strings.HasPrefix(e.Name(), ".") {
			problems = append(problems, fmt.Sprintf("unexpected workspace %s", e.Name()))
		}
	}
	return problems
}

// processesWith lists the pids whose command line contains marker.
func processesWith(marker string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// countWorkflows counts the runs matching query, polling until the count is
// want or 10 s passed (visibility is eventually consistent).
func countWorkflows(ctx context.Context, t Target, query string, want int64) (int64, error) {
	var n int64
	err := wait.For(ctx, 10*time.Second, 200*time.Millisecond, func(context.Context) error {
		// ctx, not the 10 s one: a count in flight at the deadline still
		// answers, and its number is what the caller reports.
		resp, err := t.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: t.Namespace, Query: query})
		if err != nil {
			return wait.Final(fmt.Errorf("count %q: %w", query, err))
		}
		if n = resp.GetCount(); n != want {
			return fmt.Errorf("%d runs match %q, want %d", n, query, want)
		}
		return nil
	})
	if _, timedOut := errors.AsType[*wait.TimedOut](err); timedOut && ctx.Err() == nil {
		return n, nil // the 10 s passed: the caller reports the count
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// ChurnSectionConfig sizes the whole load-and-churn benchmark: a throughput
// series without disruptions, then the churn run itself.
type ChurnSectionConfig struct {
	ChurnConfig
	// ThroughputRuns is the run count of each step of the series with
	// 1..Workers workers (0 skips the series).
	ThroughputRuns int
}

// ChurnSection runs the benchmark on the cluster when the harness has one,
// else on the dev server.
func (h *Harness) ChurnSection(ctx context.Context, cfg ChurnSectionConfig) (Section, error) {
	t := h.Dev
	if h.Cluster != nil {
		t = *h.Cluster
	}
	sec := Section{
		Title: "Load and churn",
		Intro: fmt.Sprintf("On the %s: real worker processes (the `worker` binary) poll one task queue and share one workspace root, "+
			"as workers on a shared volume do. Every run has %d rounds; each round runs one real command that appends the run's id to "+
			"`round-R.txt` and then submits its report (two model calls, the scripted model answers after %s with fixed usage). "+
			"All runs start at once.", t.Name, cfg.Rounds, cfg.Latency),
	}
	if cfg.ThroughputRuns > 0 {
		tbl := Table{Header: []string{"workers", "runs", "rounds", "wall s", "rounds/s", "dispatch p50 / p95 ms", "problems"}}
		for w := 1; w <= cfg.Workers; w++ {
			c := cfg.ChurnConfig
			c.Runs, c.Workers, c.RollingRestart, c.Kill, c.ServerRestart, c.DBSize = cfg.ThroughputRuns, w, false, false, nil, nil
			h.logf("churn: throughput with %d workers, %d runs", w, c.Runs)
			r, err := h.Churn(ctx, t, c)
			if err != nil {
				return sec, err
			}
			tbl.Add(strconv.Itoa(w), strconv.Itoa(r.Runs), strconv.Itoa(r.Rounds), secs(r.Wall),
				fmt.Sprintf("%.1f", float64(r.Rounds)/r.Wall.Seconds()), ms(Median(r.Dispatch))+" / "+ms(Percentile(r.Dispatch, 95)),
				strconv.Itoa(len(r.Problems)))
		}
		sec.Tables = append(sec.Tables, tbl)
	}
	h.logf("churn: %d runs × %d rounds on %d workers with restarts", cfg.Runs, cfg.Rounds, cfg.Workers)
	r, err := h.Churn(ctx, t, cfg.ChurnConfig)
	if err != nil {
		return sec, err
	}
	tbl := churnTable(r, cfg.ChurnConfig)
	sec.Tables = append(sec.Tables, tbl)
	sec.Notes = append(sec.Notes, "Disruptions: "+strings.Join(r.Events, "; ")+".")
	for i, p := range r.Problems {
		if i == 20 {
			sec.Notes = append(sec.Notes, fmt.Sprintf("… and %d more problems", len(r.Problems)-20))
			break
		}
		sec.Notes = append(sec.Notes, "problem: "+p)
	}
	if len(r.Problems) > 0 {
		return sec, fmt.Errorf("%d churn checks failed, first: %s", len(r.Problems), r.Problems[0])
	}
	return sec, nil
}

// churnTable is the measures of one churn run.
func churnTable(r *ChurnResult, cfg ChurnConfig) Table {
	tbl := Table{Header: []string{"measure", "value"}}
	add := func(k, v string) { tbl.Add(k, v) }
	add("runs × rounds, workers", fmt.Sprintf("%d × %d, %d", r.Runs, cfg.Rounds, r.Workers))
	add("wall s, rounds/s", fmt.Sprintf("%s, %.1f", secs(r.Wall), float64(r.Rounds)/r.Wall.Seconds()))
	add("round dispatch p50 / p95 / max ms (round closed → next round's first model request)",
		ms(Median(r.Dispatch))+" / "+ms(Percentile(r.Dispatch, 95))+" / "+ms(Max(r.Dispatch)))
	add("worker RSS per open run KiB ((peak − idle) / open runs, all workers)", fmt.Sprintf("%.0f", r.RSSPerRunKiB))
	add("history events / bytes per round", fmt.Sprintf("%.1f / %.0f", r.EventsPerRound, r.BytesPerRound))
	if cfg.DBSize != nil {
		add("database growth per 1,000 rounds MiB", fmt.Sprintf("%.1f", r.DBBytesPer1000Rounds/(1<<20)))
	}
	add("rounds retried (attempt > 1)", strconv.Itoa(r.Retried))
	if len(r.KillRecovery) > 0 {
		add("SIGKILL → retried round completed p50 / max s", secs(Median(r.KillRecovery))+" / "+secs(Max(r.KillRecovery)))
	}
	if r.ServerDown > 0 {
		add("server restart → serving again s; → first round completed s", secs(r.ServerDown)+"; "+secs(r.ServerFirstRound))
	}
	add("model requests received / answers delivered", fmt.Sprintf("%d / %d", r.ServedRequests, r.DeliveredAnswers))
	add("usage short by an answer in flight at a kill (runs / answers; at most one per lost attempt)", fmt.Sprintf("%d / %d", r.InFlightRuns, r.InFlightAnswers))
	add("orphaned command processes", strconv.Itoa(r.Orphans))
	add("checks failed", strconv.Itoa(len(r.Problems)))
	return tbl
}
