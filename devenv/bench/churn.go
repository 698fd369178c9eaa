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
	Events                           []string
}

// churnKey finds the run's key in its objective.
var churnKey = regexp.MustCompile(`churn run ([A-Za-z0-9-]+)`)

// churnUsage is what the scripted model reports for every answer, so the
// usage a run should show is a count of answers times these.
const churnPromptTokens, churnCompletionTokens = 100, 10

// churnModel: step 0 writes the round's file with a real command (its text
// carries the run's key, so orphaned commands can be found in /proc), step 1
// submits the report. It counts what it served per run and when each
// round's first request arrived.
type churnModel struct {
	rounds  int
	latency time.Duration
	marker  string

	mu     sync.Mutex
	served map[string]int               // run key → answers served
	first  map[string]map[int]time.Time // run key → round → first step-0 arrival
	total  atomic.Int64
	done   atomic.Int64 // submit_report answers served
}

func (m *churnModel) rule(req fakeopenai.Request) fakeopenai.Response {
	key := ""
	if match := churnKey.FindStringSubmatch(req.Prompt()); match != nil {
		key = match[1]
	}
	round := req.Round()
	m.mu.Lock()
	m.served[key]++
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

// Churn runs the scenario on t and checks every run; measurement problems
// are returned as an error, failed checks in ChurnResult.Problems.
func (h *Harness) Churn(ctx context.Context, t Target, cfg ChurnConfig) (*ChurnResult, error) {
	tag := h.name("churn")
	m := &churnModel{rounds: cfg.Rounds, latency: cfg.Latency, marker: "churn-cmd-" + tag,
		served: map[string]int{}, first: map[string]map[int]time.Time{}}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: m.rule})
	defer model.Close()
	res := &ChurnResult{Runs: cfg.Runs, Rounds: cfg.Runs * cfg.Rounds, Workers: cfg.Workers}
	logEvent := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		res.Events = append(res.Events, line)
		h.logf("churn: %s", line)
	}

	queue := tag
	extra := map[string]string{}
	if cfg.ConcurrentRounds > 0 {
		extra["RALPH_CONCURRENT_ROUNDS"] = strconv.Itoa(cfg.ConcurrentRounds)
	}
	workers := make([]*WorkerProc, cfg.Workers)
	for i := range workers {
		w, err := h.StartWorkerProc(ctx, t, queue, model.BaseURL(), extra)
		if err != nil {
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		workers[i] = w
	}
	var wmu sync.Mutex
	defer func() {
		wmu.Lock()
		defer wmu.Unlock()
		for _, w := range workers {
			w.Stop()
		}
	}()
	idle := make([]int64, len(workers))
	for i, w := range workers {
		idle[i], _, _ = w.Memory()
	}
	var db0 int64
	if cfg.DBSize != nil {
		var err error
		if db0, err = cfg.DBSize(ctx); err != nil {
			return nil, fmt.Errorf("database size: %w", err)
		}
	}

	// Start every run at once.
	began := time.Now()
	ids := make([]string, cfg.Runs)
	runIDs := make([]string, cfg.Runs)
	results := make([]workflows.Result, cfg.Runs)
	errs := make([]error, cfg.Runs)
	var wg sync.WaitGroup
	var peakOpen atomic.Int64
	for i := range cfg.Runs {
		ids[i] = fmt.Sprintf("%s-run-%d", queue, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, err := StartRalph(ctx, t, queue, ids[i], ralphInput{
				Objective: fmt.Sprintf("churn run %s: write one file per round", ids[i]), MaxRounds: cfg.Rounds,
			})
			if err != nil {
				errs[i] = err
				return
			}
			runIDs[i] = run.GetRunID()
			// Get follows the run through worker and server restarts.
			errs[i] = run.Get(ctx, &results[i])
		}()
	}

	// The disruptions, driven by how much of the work has been served.
	totalRounds := int64(cfg.Runs * cfg.Rounds)
	waitShare := func(share float64) error {
		want := int64(share * float64(totalRounds))
		return wait.Until(ctx, 20*time.Millisecond, func(context.Context) error {
			if n := m.done.Load(); n < want {
				return fmt.Errorf("%d of %d rounds served, waiting for %d", n, totalRounds, want)
			}
			return nil
		})
	}
	var peakRSS atomic.Int64
	sampleRSS := func() {
		wmu.Lock()
		defer wmu.Unlock()
		var sum int64
		for _, w := range workers {
			rss, _, _ := w.Memory()
			sum += rss
		}
		if sum > peakRSS.Load() {
			peakRSS.Store(sum)
		}
	}
	var killAt, serverAt, serverUp time.Time
	disrupt := func() error {
		sampleRSS()
		if cfg.RollingRestart {
			if err := waitShare(0.15); err != nil {
				return err
			}
			for i := range workers {
				sampleRSS()
				logEvent("%s: SIGTERM worker %d (pid %d), %d/%d rounds served", since(began), i, workers[i].Pid, m.done.Load(), totalRounds)
				wmu.Lock()
				workers[i].Stop()
				wmu.Unlock()
				w, err := h.StartWorkerProc(ctx, t, queue, model.BaseURL(), extra)
				if err != nil {
					return fmt.Errorf("restart worker %d: %w", i, err)
				}
				wmu.Lock()
				workers[i] = w
				wmu.Unlock()
				logEvent("%s: worker %d back (pid %d)", since(began), i, w.Pid)
			}
		}
		if cfg.Kill {
			if err := waitShare(0.45); err != nil {
				return err
			}
			sampleRSS()
			wmu.Lock()
			victim := workers[0]
			killAt = time.Now()
			victim.Kill()
			wmu.Unlock()
			logEvent("%s: SIGKILL worker 0 (pid %d), %d/%d rounds served", since(began), victim.Pid, m.done.Load(), totalRounds)
			w, err := h.StartWorkerProc(ctx, t, queue, model.BaseURL(), extra)
			if err != nil {
				return fmt.Errorf("replace killed worker: %w", err)
			}
			wmu.Lock()
			workers[0] = w
			wmu.Unlock()
		}
		if cfg.ServerRestart != nil {
			if err := waitShare(0.7); err != nil {
				return err
			}
			sampleRSS()
			serverAt = time.Now()
			logEvent("%s: restarting the Temporal server, %d/%d rounds served", since(began), m.done.Load(), totalRounds)
			if err := cfg.ServerRestart(ctx); err != nil {
				return fmt.Errorf("server restart: %w", err)
			}
			serverUp = time.Now()
			logEvent("%s: Temporal server serving again after %s", since(began), serverUp.Sub(serverAt).Round(time.Millisecond))
		}
		return nil
	}
	disruptErr := make(chan error, 1)
	go func() { disruptErr <- disrupt() }()
	sampling, stopSampling := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-sampling.Done():
				return
			case <-time.After(500 * time.Millisecond):
				sampleRSS()
				if open := int64(cfg.Runs) - m.done.Load()/int64(cfg.Rounds); open > peakOpen.Load() {
					peakOpen.Store(open)
				}
			}
		}
	}()
	wg.Wait()
	res.Wall = time.Since(began)
	stopSampling()
	if err := <-disruptErr; err != nil {
		return nil, err
	}
	res.ServedRequests = int(m.total.Load())

	// Every run: completed once, the expected report, usage = what was served.
	for i, id := range ids {
		switch {
		case errs[i] != nil:
			res.Problems = append(res.Problems, fmt.Sprintf("%s: %v", id, errs[i]))
			continue
		case results[i].Status != report.StatusComplete || results[i].RoundsStarted != cfg.Rounds:
			res.Problems = append(res.Problems, fmt.Sprintf("%s: status %q after %d rounds, want complete after %d", id, results[i].Status, results[i].RoundsStarted, cfg.Rounds))
			continue
		case results[i].Report == nil || results[i].Report.Summary != fmt.Sprintf("churn run %s done", id):
			res.Problems = append(res.Problems, fmt.Sprintf("%s: unexpected final report %+v", id, results[i].Report))
		}
		m.mu.Lock()
		served := m.served[id]
		m.mu.Unlock()
		u := results[i].Usage
		if u.ModelCalls != served || u.PromptTokens != served*churnPromptTokens || u.CompletionTokens != served*churnCompletionTokens {
			res.Problems = append(res.Problems, fmt.Sprintf("%s: usage %d calls / %d+%d tokens, the model served %d answers (%d+%d tokens)",
				id, u.ModelCalls, u.PromptTokens, u.CompletionTokens, served, served*churnPromptTokens, served*churnCompletionTokens))
		}
	}
	res.Problems = append(res.Problems, h.checkChurnWorkspaces(workers[0].Root, ids, cfg.Rounds)...)
	res.Orphans = len(processesWith(m.marker))
	if res.Orphans > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d command processes outlived their rounds", res.Orphans))
	}
	// Exactly once, and nothing left open, as the server sees it.
	for _, q := range []struct {
		query string
		want  int64
	}{
		{fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue), 0},
		{fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Completed'", queue), int64(cfg.Runs)},
		{fmt.Sprintf("TaskQueue = '%s'", queue), int64(cfg.Runs)},
	} {
		n, err := countWorkflows(ctx, t, q.query, q.want)
		if err != nil {
			return nil, err
		}
		if n != q.want {
			res.Problems = append(res.Problems, fmt.Sprintf("visibility: %d runs match %q, want %d", n, q.query, q.want))
		}
	}

	// Measurements from the histories.
	var events, bytes int64
	for i, id := range ids {
		if errs[i] != nil {
			continue
		}
		chain, err := Chain(ctx, t, id, runIDs[i])
		if err != nil {
			return nil, err
		}
		for _, rh := range chain {
			events += rh.Length
			bytes += rh.SizeBytes
		}
		rt := Timing(chain, activities.RunRoundName)
		m.mu.Lock()
		first := m.first[id]
		m.mu.Unlock()
		for r := 1; r < len(rt.Completed); r++ {
			if at, ok := first[r+1]; ok && !rt.Completed[r-1].IsZero() {
				res.Dispatch = append(res.Dispatch, at.Sub(rt.Completed[r-1]))
			}
		}
		for _, rh := range chain {
			for _, ev := range rh.Events {
				a := ev.GetActivityTaskStartedEventAttributes()
				if a == nil || a.GetAttempt() < 2 {
					continue
				}
				res.Retried++
				if !killAt.IsZero() && ev.GetEventTime().AsTime().After(killAt) {
					if done := completedAfter(rh, a.GetScheduledEventId()); !done.IsZero() {
						res.KillRecovery = append(res.KillRecovery, done.Sub(killAt))
					}
				}
			}
		}
		if !serverAt.IsZero() {
			for _, c := range rt.Completed {
				if c.After(serverAt) && (res.ServerFirstRound == 0 || c.Sub(serverAt) < res.ServerFirstRound) {
					res.ServerFirstRound = c.Sub(serverAt)
				}
			}
		}
	}
	if !serverAt.IsZero() {
		res.ServerDown = serverUp.Sub(serverAt)
	}
	if res.Rounds > 0 {
		res.EventsPerRound = float64(events) / float64(res.Rounds)
		res.BytesPerRound = float64(bytes) / float64(res.Rounds)
	}
	var idleSum int64
	for _, v := range idle {
		idleSum += v
	}
	if open := peakOpen.Load(); open > 0 {
		res.RSSPerRunKiB = float64(peakRSS.Load()-idleSum) / float64(open)
	}
	if cfg.DBSize != nil {
		db1, err := cfg.DBSize(ctx)
		if err != nil {
			return nil, fmt.Errorf("database size: %w", err)
		}
		res.DBBytesPer1000Rounds = float64(db1-db0) * 1000 / float64(res.Rounds)
	}
	sort.Strings(res.Problems)
	return res, nil
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
	add("model requests served", strconv.Itoa(r.ServedRequests))
	add("orphaned command processes", strconv.Itoa(r.Orphans))
	add("checks failed", strconv.Itoa(len(r.Problems)))
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
