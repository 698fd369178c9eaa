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
	cpu0, _ := w.CPU()
	srv0, _ := ProcCPU(h.DevPID)
	self0, _ := ProcCPU(0)
	busy0, total0 := MachineCPU()

	start := time.Now()
	type result struct {
		id, runID string
		err       error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("%s-run-%d", queue, i)
			results[i].id = id
			run, err := StartRalph(ctx, h.Dev, queue, id, ralphInput{Objective: "benchmark one worker at scale", MaxRounds: cfg.Rounds})
			if err != nil {
				results[i].err = err
				return
			}
			results[i].runID = run.GetRunID()
			var res workflows.Result
			if err := run.Get(ctx, &res); err != nil {
				results[i].err = err
				return
			}
			if res.RoundsStarted != cfg.Rounds {
				results[i].err = fmt.Errorf("run %s: %d rounds, want %d", id, res.RoundsStarted, cfg.Rounds)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	_, hwm, err := w.Memory()
	if err != nil {
		return nil, 0, err
	}
	cpu1, _ := w.CPU()
	srv1, _ := ProcCPU(h.DevPID)
	self1, _ := ProcCPU(0)
	busy1, total1 := MachineCPU()
	failed := 0
	var firstErr error
	var execs, waits, wftWaits, firstWaits []time.Duration
	sticky := 0
	for _, r := range results {
		if r.err != nil {
			failed++
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		chain, err := Chain(ctx, h.Dev, r.id, r.runID)
		if err != nil {
			return nil, 0, err
		}
		rt := Timing(chain, activities.RunRoundName)
		execs = append(execs, rt.Executions()...)
		wftWaits = append(wftWaits, rt.WorkflowTaskWaits...)
		firstWaits = append(firstWaits, rt.FirstTaskWaits...)
		sticky += stickyTimeouts(chain)
		for i := range rt.Scheduled {
			if !rt.Started[i].IsZero() {
				waits = append(waits, rt.Started[i].Sub(rt.Scheduled[i]))
			}
		}
	}
	if failed > 0 {
		return nil, 0, fmt.Errorf("%d of %d runs failed, first: %v", failed, n, firstErr)
	}
	rounds := n * cfg.Rounds
	serverCPU := "?"
	if h.DevPID > 0 {
		serverCPU = ms((srv1 - srv0) / time.Duration(rounds))
	}
	busyShare := "?"
	if total1 > total0 {
		busyShare = fmt.Sprintf("%.0f%%", 100*float64(busy1-busy0)/float64(total1-total0))
	}
	throughput := float64(rounds) / wall.Seconds()
	ideal := float64(min(n, slots)) / roundMin.Seconds()
	row := []string{strconv.Itoa(slots), strconv.Itoa(n), strconv.Itoa(rounds), secs(wall),
		fmt.Sprintf("%.2f", throughput), fmt.Sprintf("%.2f", ideal), fmt.Sprintf("%.0f%%", 100*throughput/ideal),
		secs(Median(execs)) + " / " + secs(Percentile(execs, 95)),
		secs(Median(waits)) + " / " + secs(Percentile(waits, 95)),
		secs(Median(firstWaits)) + " / " + secs(Percentile(firstWaits, 95)),
		secs(Median(wftWaits)) + " / " + secs(Percentile(wftWaits, 95)),
		strconv.Itoa(sticky),
		mib(idle), mib(hwm), fmt.Sprintf("%.0f", float64(hwm-idle)/float64(n)),
		ms((cpu1-cpu0)/time.Duration(rounds)) + " / " + serverCPU + " / " + ms((self1-self0)/time.Duration(rounds)),
		busyShare,
	}
	return row, hwm, nil
}
