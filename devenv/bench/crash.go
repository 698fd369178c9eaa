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
		got, err := h.crashSeries(ctx, hb, cfg.Samples)
		if err != nil {
			tbl.Add(strconv.Itoa(hb), strconv.Itoa(len(got.resumed)), "failed: "+err.Error())
			continue
		}
		tbl.Add(strconv.Itoa(hb), strconv.Itoa(len(got.resumed)), secs(Median(got.resumed)), secs(Percentile(got.resumed, 95)), secs(Max(got.resumed)),
			secs(Median(got.finished)), secs(Percentile(got.finished, 95)), secs(Max(got.finished)),
			fmt.Sprintf("%d of %d runs", got.sticky, len(got.finished)), strconv.Itoa(got.alive))
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

// crashSamples is what one heartbeat-timeout setting measured.
type crashSamples struct {
	resumed, finished []time.Duration // kill → the fresh session's first call; kill → the run closed
	alive             int             // the killed rounds' commands still running 5 s after the kill
	sticky            int             // runs whose history shows a sticky workflow-task timeout
}

// crashSeries runs samples crashes with heartbeat timeout hb on two
// workers, replacing the killed one after each.
func (h *Harness) crashSeries(ctx context.Context, hb, samples int) (crashSamples, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c := &crashRun{h: h, hb: hb, m: &crashModel{sessions: map[string]int{}, resumed: map[string]time.Time{}},
		queue: h.name("crash"), env: map[string]string{"RALPH_HEARTBEAT_TIMEOUT_SECONDS": strconv.Itoa(hb)}}
	c.model = fakeopenai.NewServer(fakeopenai.Script{Rule: c.m.rule})
	defer c.model.Close()
	defer c.stop()
	for len(c.workers) < 2 {
		if err := c.addWorker(ctx); err != nil {
			return c.got, err
		}
	}
	for i := range samples {
		if err := c.sample(ctx, i+1, samples); err != nil {
			return c.got, err
		}
		if err := c.addWorker(ctx); err != nil {
			return c.got, err
		}
	}
	return c.got, nil
}

// crashRun is one crash series under way.
type crashRun struct {
	h       *Harness
	hb      int
	m       *crashModel
	model   *fakeopenai.Server
	queue   string
	env     map[string]string
	workers []*WorkerProc
	got     crashSamples
}

func (c *crashRun) addWorker(ctx context.Context) error {
	w, err := c.h.StartWorkerProc(ctx, c.h.Dev, c.queue, c.model.BaseURL(), c.env)
	if err != nil {
		return err
	}
	c.workers = append(c.workers, w)
	return nil
}

func (c *crashRun) stop() {
	for _, w := range c.workers {
		w.Stop()
	}
}

// sample starts a run, kills the worker running its command, and measures
// until the round resumed and the run finished elsewhere.
func (c *crashRun) sample(ctx context.Context, n, samples int) error {
	key := c.h.name("crash-run")
	run, err := StartRalph(ctx, c.h.Dev, c.queue, key, ralphInput{Objective: "survive a worker crash: crash sample " + key, MaxRounds: 1, Workspace: key})
	if err != nil {
		return err
	}
	firstRunID := run.GetRunID() // Get follows a continue-as-new and moves GetRunID on
	pids, err := proc.WaitPIDFile(ctx, filepath.Join(c.workers[0].Root, key, "pids.txt"), 2, 60*time.Second)
	if err != nil {
		return err
	}
	victim, err := c.owner(pids[0])
	if err != nil {
		return err
	}
	killed := time.Now()
	c.workers[victim].Kill()
	c.workers = append(c.workers[:victim], c.workers[victim+1:]...)

	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		return fmt.Errorf("run %s failed after the crash: %w", key, err)
	}
	done := time.Since(killed)
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 {
		return fmt.Errorf("run %s: result %+v", key, res)
	}
	at := c.m.resumedAt(key)
	if at.IsZero() {
		return fmt.Errorf("run %s finished without a second session", key)
	}
	if chain, err := Chain(ctx, c.h.Dev, key, firstRunID); err == nil && stickyTimeouts(chain) > 0 {
		c.got.sticky++
	}
	c.got.alive += aliveAfter(killed.Add(5*time.Second), pids)
	c.got.resumed = append(c.got.resumed, at.Sub(killed))
	c.got.finished = append(c.got.finished, done)
	c.h.logf("crash: heartbeat timeout %d s, sample %d/%d: resumed after %s, finished after %s",
		c.hb, n, samples, at.Sub(killed).Round(time.Millisecond), done.Round(time.Millisecond))
	return nil
}

// owner is the index of the worker among pid's ancestors (a sandbox's bwrap
// processes stand between a worker and the round's shell).
func (c *crashRun) owner(pid int) (int, error) {
	for anc := parentPID(pid); anc > 1; anc = parentPID(anc) {
		for j, w := range c.workers {
			if w.Pid == anc {
				return j, nil
			}
		}
	}
	return -1, fmt.Errorf("the round's shell (pid %d) descends from none of the workers", pid)
}

// aliveAfter waits until at and counts the pids still running then.
func aliveAfter(at time.Time, pids []int) int {
	if wait := time.Until(at); wait > 0 {
		time.Sleep(wait)
	}
	n := 0
	for _, pid := range pids {
		if proc.Alive(pid) {
			n++
		}
	}
	return n
}
