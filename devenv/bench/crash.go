package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// CrashConfig sizes the worker-crash recovery benchmark.
type CrashConfig struct {
	Samples           int
	HeartbeatTimeouts []int // RALPH_HEARTBEAT_TIMEOUT_SECONDS settings
}

var crashKey = regexp.MustCompile(`crash sample (\S+)`)

// crashModel: the first session of a sample runs `sleep 300` (and is killed
// with its worker); the next session of the same sample, on the other
// worker, records when it began and submits a complete report.
type crashModel struct {
	mu       sync.Mutex
	sessions map[string]int
	resumed  map[string]time.Time
}

func (m *crashModel) rule(req fakeopenai.Request) fakeopenai.Response {
	key := ""
	if match := crashKey.FindStringSubmatch(req.Prompt()); match != nil {
		key = match[1]
	}
	m.mu.Lock()
	if req.Step() == 0 {
		m.sessions[key]++
		if m.sessions[key] == 2 {
			m.resumed[key] = time.Now()
		}
	}
	session := m.sessions[key]
	m.mu.Unlock()
	if req.Step() == 0 && session == 1 {
		return toolCall("run_command", map[string]any{"command": sleepCommand})
	}
	return submitComplete("finished after the first worker was killed")
}

func (m *crashModel) resumedAt(key string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resumed[key]
}

// Crash measures kill -9 of the worker running a round to the round resumed
// and finished on another worker.
func (h *Harness) Crash(ctx context.Context, cfg CrashConfig) (Section, error) {
	sec := Section{
		Title: "4. Worker-crash recovery",
		Intro: fmt.Sprintf("Two worker processes (the real binary) poll one task queue on the dev server. Each sample starts a run whose "+
			"round runs `sleep 300`, finds the worker that runs the command (the worker among its shell's ancestors; a sandbox's bwrap processes stand between them), kills it with SIGKILL, and "+
			"measures until the retried round's fresh session makes its first model call on the other worker (resumed) and until "+
			"the workflow is closed with the round completed (finished). A replacement worker is started after each sample, so two "+
			"workers always poll. %d samples per heartbeat-timeout setting (5 s is the default).", cfg.Samples),
	}
	tbl := Table{Header: []string{"RALPH_HEARTBEAT_TIMEOUT_SECONDS", "samples", "kill → resumed p50 s", "p95 s", "max s",
		"kill → finished p50 s", "p95 s", "max s", "sticky workflow-task timeouts", "commands alive after the kill"}}
	for _, hb := range cfg.HeartbeatTimeouts {
		resumed, finished, alive, sticky, err := h.crashSeries(ctx, hb, cfg.Samples)
		if err != nil {
			tbl.Add(strconv.Itoa(hb), strconv.Itoa(len(resumed)), "failed: "+err.Error())
			continue
		}
		tbl.Add(strconv.Itoa(hb), strconv.Itoa(len(resumed)), secs(Median(resumed)), secs(Percentile(resumed, 95)), secs(Max(resumed)),
			secs(Median(finished)), secs(Percentile(finished, 95)), secs(Max(finished)),
			fmt.Sprintf("%d of %d runs", sticky, len(finished)), strconv.Itoa(alive))
	}
	sec.Tables = []Table{tbl}
	sec.Notes = append(sec.Notes,
		"Temporal notices a dead worker's round by its missing heartbeats, so kill → resumed is about the heartbeat timeout plus the round retry policy's first interval (1 s).",
		"kill → finished adds the workflow task that records the round: when the killed worker had the run in its sticky cache (it ran the previous workflow task), "+
			"that task first waits for the dead worker's sticky queue to time out (StickyScheduleToStartTimeout, 2 s in the Ralph worker; the SDK default is 5 s) and then goes to the normal queue; "+
			"the column \"sticky workflow-task timeouts\" counts the runs whose history shows that ScheduleToStart timeout.",
		"\"commands alive\" counts the killed round's shell and `sleep` still running 5 s after the kill (the parent-death signal and the process-group lifeline take them down with the worker).")
	return sec, nil
}

func (h *Harness) crashSeries(ctx context.Context, hb, samples int) (resumed, finished []time.Duration, alive, sticky int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	m := &crashModel{sessions: map[string]int{}, resumed: map[string]time.Time{}}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: m.rule})
	defer model.Close()
	queue := h.name("crash")
	env := map[string]string{"RALPH_HEARTBEAT_TIMEOUT_SECONDS": strconv.Itoa(hb)}
	var workers []*WorkerProc
	defer func() {
		for _, w := range workers {
			w.Stop()
		}
	}()
	for len(workers) < 2 {
		w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), env)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		workers = append(workers, w)
	}
	root := workers[0].Root
	for i := range samples {
		key := h.name("crash-run")
		run, err := StartRalph(ctx, h.Dev, queue, key, ralphInput{Objective: "survive a worker crash: crash sample " + key, MaxRounds: 1, Workspace: key})
		if err != nil {
			return resumed, finished, alive, sticky, err
		}
		firstRunID := run.GetRunID()
		pids, err := proc.WaitPIDFile(ctx, filepath.Join(root, key, "pids.txt"), 2, 60*time.Second)
		if err != nil {
			return resumed, finished, alive, sticky, err
		}
		// The shell's owner is the worker among its ancestors (a sandbox's
		// bwrap processes stand between them).
		victim := -1
		for owner := parentPID(pids[0]); owner > 1 && victim < 0; owner = parentPID(owner) {
			for j, w := range workers {
				if w.Pid == owner {
					victim = j
				}
			}
		}
		if victim < 0 {
			return resumed, finished, alive, sticky, fmt.Errorf("the round's shell (pid %d) descends from none of the workers", pids[0])
		}
		killed := time.Now()
		workers[victim].Kill()
		workers = append(workers[:victim], workers[victim+1:]...)

		var res workflows.Result
		if err := run.Get(ctx, &res); err != nil {
			return resumed, finished, alive, sticky, fmt.Errorf("run %s failed after the crash: %w", key, err)
		}
		done := time.Since(killed)
		if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
			return resumed, finished, alive, sticky, fmt.Errorf("run %s: result %+v", key, res)
		}
		at := m.resumedAt(key)
		if at.IsZero() {
			return resumed, finished, alive, sticky, fmt.Errorf("run %s finished without a second session", key)
		}
		if chain, err := Chain(ctx, h.Dev, key, firstRunID); err == nil && stickyTimeouts(chain) > 0 {
			sticky++
		}
		if wait := 5*time.Second - time.Since(killed); wait > 0 {
			time.Sleep(wait)
		}
		for _, pid := range pids {
			if proc.Alive(pid) {
				alive++
			}
		}
		resumed = append(resumed, at.Sub(killed))
		finished = append(finished, done)
		h.logf("crash: heartbeat timeout %d s, sample %d/%d: resumed after %s, finished after %s",
			hb, i+1, samples, at.Sub(killed).Round(time.Millisecond), done.Round(time.Millisecond))

		w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), env)
		if err != nil {
			return resumed, finished, alive, sticky, err
		}
		workers = append(workers, w)
	}
	return resumed, finished, alive, sticky, nil
}
