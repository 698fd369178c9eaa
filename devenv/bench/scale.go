package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
)

// ScaleConfig sizes the one-worker scale benchmark.
type ScaleConfig struct {
	Runs             []int // concurrent runs per step, e.g. 10, 25, 50, 100
	ConcurrentRounds []int // RALPH_CONCURRENT_ROUNDS settings
	Rounds           int   // rounds per run
	Latency          time.Duration
}

// modelCallsPerRound: list_files, write_file, run_command, submit_report.
const modelCallsPerRound = 4

// scaleScript: every answer waits Latency; each round makes three tool calls
// (list_files, write_file, run_command `true`) and then submits a report.
func scaleScript(latency time.Duration) fakeopenai.Script {
	return fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		var r fakeopenai.Response
		switch req.Step() {
		case 0:
			r = toolCall("list_files", map[string]any{})
		case 1:
			r = toolCall("write_file", map[string]any{"path": fmt.Sprintf("round-%d.txt", req.Round()), "content": "work of round " + strconv.Itoa(req.Round()) + "\n"})
		case 2:
			r = toolCall("run_command", map[string]any{"command": "true"})
		default:
			r = submitContinue(fmt.Sprintf("round %d wrote its file", req.Round()))
		}
		r.Delay = latency
		return r
	}}
}

// Scale runs N concurrent Ralph runs on one real worker process (the worker
// binary) and measures throughput against the bound set by the worker's
// concurrency setting, and the worker's memory.
func (h *Harness) Scale(ctx context.Context, cfg ScaleConfig) (Section, error) {
	roundMin := time.Duration(modelCallsPerRound) * cfg.Latency
	sec := Section{
		Title: "2. Scale on one worker",
		Intro: fmt.Sprintf("N concurrent Ralph runs × %d rounds on one worker process (the real `worker` binary, default settings except "+
			"RALPH_CONCURRENT_ROUNDS), on the dev server. Every model call waits %s; each round makes 3 tool calls "+
			"(list_files, write_file, run_command `true`) and then submits a `continue` report: %d model calls, so a round "+
			"takes at least %s. The ideal throughput is min(N, RALPH_CONCURRENT_ROUNDS) / %s; the bound comes from "+
			"MaxConcurrentActivityExecutionSize = RALPH_CONCURRENT_ROUNDS (one round is one activity). Memory is the worker "+
			"process's own (/proc/<pid>/status: VmRSS when idle and polling, VmHWM = peak RSS); the commands it runs are separate processes "+
			"and the scripted model runs in the benchmark process. A fresh worker per row.",
			cfg.Rounds, cfg.Latency, modelCallsPerRound, roundMin, roundMin),
	}
	model := fakeopenai.NewServer(scaleScript(cfg.Latency))
	defer model.Close()

	tbl := Table{Header: []string{"RALPH_CONCURRENT_ROUNDS", "runs", "rounds", "wall s", "throughput rounds/s", "ideal rounds/s",
		"efficiency", "round exec p50 / p95 s", "round queue wait p50 / p95 s", "first workflow task wait p50 / p95 s", "workflow task wait after a round p50 / p95 s", "sticky timeouts", "idle RSS MiB", "peak RSS MiB", "(peak − idle) / run KiB", "CPU ms/round: worker / server / bench", "machine CPU busy"}}
	type point struct{ runs, peak int64 }
	var growth []string
	for _, slots := range cfg.ConcurrentRounds {
		var first, last point
		for _, n := range cfg.Runs {
			h.logf("scale: %d runs × %d rounds, RALPH_CONCURRENT_ROUNDS=%d", n, cfg.Rounds, slots)
			row, peak, err := h.scaleStep(ctx, model, slots, n, cfg, roundMin)
			if err != nil {
				tbl.Add(strconv.Itoa(slots), strconv.Itoa(n), "failed: "+err.Error())
				continue
			}
			tbl.Add(row...)
			if first.runs == 0 {
				first = point{int64(n), peak}
			}
			last = point{int64(n), peak}
		}
		if first.runs != 0 && last.runs != first.runs {
			growth = append(growth, fmt.Sprintf("RALPH_CONCURRENT_ROUNDS=%d: peak RSS %s MiB at %d runs → %s MiB at %d runs (%.0f KiB per extra run).",
				slots, mib(first.peak), first.runs, mib(last.peak), last.runs, float64(last.peak-first.peak)/float64(last.runs-first.runs)))
		}
	}
	sec.Tables = []Table{tbl}
	sec.Notes = append(growth,
		"round exec = ActivityTaskStarted → ActivityTaskCompleted of each round (includes the model latency); round queue wait = ActivityTaskScheduled → ActivityTaskStarted (waiting for a free slot on the worker); workflow task wait = WorkflowTaskScheduled → WorkflowTaskStarted, for the first workflow task of each run (all N runs start at once) and for the decisions after a round (a finished round waiting for the worker to pick up the decision that starts the next one). Throughput below the bound is time spent between rounds: rounds themselves run at the model's pace.",
		"sticky timeouts counts workflow tasks that waited StickyScheduleToStartTimeout (2 s in the Ralph worker) on the worker's sticky queue and were then moved to the normal queue: a worker too busy to poll its sticky queue in time.",
		"CPU per round: the worker process, the dev server process and the benchmark process (scripted model, clients); machine CPU busy is the share of both cores in use during the row, everything on the machine included.",
		"An open run holds no slot between rounds; with RALPH_CONCURRENT_ROUNDS=8 most of the N runs wait in the task queue, which is the intended back-pressure.")
	return sec, nil
}

// scaleStep runs n runs at once on one worker with slots concurrent rounds
// and returns its row and the worker's peak memory. Its steps: start the
// worker, snapshot the CPU, run everything, snapshot again, read the
// histories, write the row.
func (h *Harness) scaleStep(ctx context.Context, model *fakeopenai.Server, slots, n int, cfg ScaleConfig, roundMin time.Duration) ([]string, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	queue := h.name("scale")
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), map[string]string{"RALPH_CONCURRENT_ROUNDS": strconv.Itoa(slots)})
	if err != nil {
		return nil, 0, err
	}
	defer w.Stop()
	time.Sleep(time.Second) // let the worker settle after connecting
	idle, _, err := w.Memory()
	if err != nil {
		return nil, 0, err
	}
	before := h.cpuNow(w)
	start := time.Now()
	runs := h.scaleRuns(ctx, queue, n, cfg.Rounds)
	wall := time.Since(start)
	_, hwm, err := w.Memory()
	if err != nil {
		return nil, 0, err
	}
	spent := h.cpuNow(w).since(before)
	times, err := h.scaleTimes(ctx, runs)
	if err != nil {
		return nil, 0, err
	}
	rounds := n * cfg.Rounds
	throughput := float64(rounds) / wall.Seconds()
	ideal := float64(min(n, slots)) / roundMin.Seconds()
	row := []string{strconv.Itoa(slots), strconv.Itoa(n), strconv.Itoa(rounds), secs(wall),
		fmt.Sprintf("%.2f", throughput), fmt.Sprintf("%.2f", ideal), fmt.Sprintf("%.0f%%", 100*throughput/ideal)}
	row = append(row, times.cells()...)
	row = append(row, mib(idle), mib(hwm), fmt.Sprintf("%.0f", float64(hwm-idle)/float64(n)))
	row = append(row, spent.cells(rounds, h.DevPID > 0)...)
	return row, hwm, nil
}

// scaleRun is one run of a scale step, as started and ended.
type scaleRun struct {
	id, runID string
	err       error
}

// scaleRuns starts n runs of rounds rounds at once and waits for them all.
func (h *Harness) scaleRuns(ctx context.Context, queue string, n, rounds int) []scaleRun {
	runs := make([]scaleRun, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := &runs[i]
			r.id = fmt.Sprintf("%s-run-%d", queue, i)
			run, err := StartRalph(ctx, h.Dev, queue, r.id, ralphInput{Objective: "benchmark one worker at scale", MaxRounds: rounds})
			if err != nil {
				r.err = err
				return
			}
			r.runID = run.GetRunID()
			var res workflows.Result
			if err := run.Get(ctx, &res); err != nil {
				r.err = err
				return
			}
			if res.RoundsStarted != rounds {
				r.err = fmt.Errorf("run %s: %d rounds, want %d", r.id, res.RoundsStarted, rounds)
			}
		})
	}
	wg.Wait()
	return runs
}

// scaleTimesOf are a step's waits and executions from its histories.
type scaleTimesOf struct {
	execs, waits, wftWaits, firstWaits []time.Duration
	sticky                             int
}

// scaleTimes reads every run's history chain; a failed run fails the step.
func (h *Harness) scaleTimes(ctx context.Context, runs []scaleRun) (scaleTimesOf, error) {
	var t scaleTimesOf
	failed := 0
	var firstErr error
	for _, r := range runs {
		if r.err != nil {
			failed++
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		chain, err := Chain(ctx, h.Dev, r.id, r.runID)
		if err != nil {
			return t, err
		}
		rt := Timing(chain, activities.RunRoundName)
		t.execs = append(t.execs, rt.Executions()...)
		t.wftWaits = append(t.wftWaits, rt.WorkflowTaskWaits...)
		t.firstWaits = append(t.firstWaits, rt.FirstTaskWaits...)
		t.sticky += stickyTimeouts(chain)
		for i := range rt.Scheduled {
			if !rt.Started[i].IsZero() {
				t.waits = append(t.waits, rt.Started[i].Sub(rt.Scheduled[i]))
			}
		}
	}
	if failed > 0 {
		return t, fmt.Errorf("%d of %d runs failed, first: %v", failed, len(runs), firstErr)
	}
	return t, nil
}

// cells are the p50 / p95 columns and the sticky timeouts.
func (t scaleTimesOf) cells() []string {
	p := func(xs []time.Duration) string { return secs(Median(xs)) + " / " + secs(Percentile(xs, 95)) }
	return []string{p(t.execs), p(t.waits), p(t.firstWaits), p(t.wftWaits), strconv.Itoa(t.sticky)}
}

// cpuTimes is the CPU the worker, the dev server and this process have
// used, and the machine's busy and total time.
type cpuTimes struct {
	worker, server, self time.Duration
	busy, total          int64
}

func (h *Harness) cpuNow(w *WorkerProc) cpuTimes {
	var c cpuTimes
	c.worker, _ = w.CPU()
	c.server, _ = ProcCPU(h.DevPID)
	c.self, _ = ProcCPU(0)
	c.busy, c.total = MachineCPU()
	return c
}

// since is what was used from before to c.
func (c cpuTimes) since(before cpuTimes) cpuTimes {
	return cpuTimes{worker: c.worker - before.worker, server: c.server - before.server, self: c.self - before.self,
		busy: c.busy - before.busy, total: c.total - before.total}
}

// cells are the CPU per round (worker / server / this process; "?" for a
// server whose pid is unknown) and the machine's busy share.
func (c cpuTimes) cells(rounds int, serverKnown bool) []string {
	perRound := func(d time.Duration) string { return ms(d / time.Duration(rounds)) }
	server := "?"
	if serverKnown {
		server = perRound(c.server)
	}
	busy := "?"
	if c.total > 0 {
		busy = fmt.Sprintf("%.0f%%", 100*float64(c.busy)/float64(c.total))
	}
	return []string{perRound(c.worker) + " / " + server + " / " + perRound(c.self), busy}
}
