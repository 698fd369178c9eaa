package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// LanesConfig sizes the speculative-lanes benchmark (SPEC 41).
type LanesConfig struct {
	Tasks    int           // tasks per campaign
	Loop     time.Duration // how long each task's loop takes (the model's delay)
	Verify   string        // the campaign's verify command
	Parallel int           // maxParallel
	Lanes    []int         // mergeLanes values, one campaign each
	Workers  []int         // worker processes on the campaign's queue, each with every Lanes value
}

// lanesGoal is SPEC 41's goal: mergeLanes 4 at most 0.4× of mergeLanes 1.
const lanesGoal = 0.4

// Lanes measures the same campaign at several mergeLanes on one worker and
// on several: loops of about cfg.Loop that land independent files, a
// verify that only waits (no CPU), so the queue's verifies are the
// campaign's clock.
func (h *Harness) Lanes(ctx context.Context, cfg LanesConfig) (Section, error) {
	sec := Section{
		Title: "Campaigns: speculative merge lanes",
		Intro: fmt.Sprintf("Worker processes (the real binary, each with its own workspace root, `RALPH_GIT=remote` on a local bare repository, "+
			"real bubblewrap, `RALPH_CONCURRENT_ROUNDS=16`) on one task queue of the dev server; a campaign of %d independent tasks at "+
			"maxParallel %d, each one round whose scripted model answers after %s, writes one file and reports `complete` (each task's "+
			"own verify `true`); the campaign's verify command is `%s`. The same campaign at each mergeLanes and worker count; wall "+
			"clock from the start to the result.", cfg.Tasks, cfg.Parallel, cfg.Loop, cfg.Verify),
	}
	tbl := Table{Header: []string{"workers", "mergeLanes", "wall clock s", "against mergeLanes 1", "verifies (discarded)",
		"verify step ms p50 (min–max)", "most verifies at once", "CPU s per worker"}}
	for _, workers := range cfg.Workers {
		walls := map[int]time.Duration{}
		for _, lanes := range cfg.Lanes {
			r, err := h.lanesRun(ctx, cfg, lanes, workers)
			if err != nil {
				tbl.Add(strconv.Itoa(workers), strconv.Itoa(lanes), "failed: "+err.Error())
				continue
			}
			walls[lanes] = r.wall
			var took []time.Duration
			for _, v := range r.st.Verifies {
				if v.Discarded == "" {
					took = append(took, time.Duration(v.DurationMs)*time.Millisecond)
				}
			}
			tbl.Add(strconv.Itoa(workers), strconv.Itoa(lanes), secs(r.wall), ratio(r.wall.Seconds(), walls[1].Seconds()),
				fmt.Sprintf("%d (%d)", r.st.VerifyCount, r.st.VerifyDiscarded), spread(took), strconv.Itoa(mostAtOnce(r.st.Verifies)), cpuList(r.cpu))
		}
		sec.Goals = append(sec.Goals, lanesGoalOn(workers, walls))
	}
	sec.Tables = []Table{tbl}
	sec.Notes = append(sec.Notes, "against mergeLanes 1: on the same number of workers (n/a when mergeLanes 1 was not run or failed).",
		"verify step: the campaign's own record of each verify (its merge step's start to its result; a lane's verify step alone); the last 20 only.",
		"CPU s per worker: each worker process's own user+system time over the campaign (not its commands'), to show which workers took part.")
	return sec, nil
}

// lanesGoalOn judges SPEC 41's goal from the wall clocks on one worker count.
func lanesGoalOn(workers int, walls map[int]time.Duration) Goal {
	g := Goal{What: fmt.Sprintf("%d worker(s): mergeLanes 4 at most %.1f× of mergeLanes 1", workers, lanesGoal)}
	one, four := walls[1], walls[4]
	if one > 0 && four > 0 {
		r := four.Seconds() / one.Seconds()
		g.Measured = fmt.Sprintf("%s s against %s s: %.2f×", secs(four), secs(one), r)
		g.Met = r <= lanesGoal
	}
	return g
}

func cpuList(cpu []time.Duration) string {
	var parts []string
	for _, c := range cpu {
		parts = append(parts, fmt.Sprintf("%.1f", c.Seconds()))
	}
	return strings.Join(parts, " / ")
}

// lanesResult is one campaign of the lanes benchmark.
type lanesResult struct {
	wall time.Duration
	st   campaign.CampaignStatus
	cpu  []time.Duration // each worker process's CPU time
}

func (h *Harness) lanesRun(ctx context.Context, cfg LanesConfig, lanes, workers int) (lanesResult, error) {
	var r lanesResult
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	bare := filepath.Join(h.Dir, h.name("lanes-remote")+".git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		return r, fmt.Errorf("git init: %v: %s", err, out)
	}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			r := toolCall("write_file", map[string]string{"path": fmt.Sprintf("file-%d.txt", req.Index), "content": "x\n"})
			r.Delay = cfg.Loop
			return r
		}
		return submitComplete("wrote its file")
	}})
	defer model.Close()
	queue := h.name(fmt.Sprintf("lanes-%dw-%d", workers, lanes))
	procs, err := h.startLaneWorkers(ctx, queue, model.BaseURL(), bare, workers)
	defer func() {
		for _, w := range procs {
			w.Stop()
		}
	}()
	if err != nil {
		return r, err
	}
	var list []campaign.Task
	for i := range cfg.Tasks {
		list = append(list, campaign.Task{ID: fmt.Sprintf("t%d", i), Objective: fmt.Sprintf("write file %d", i), VerifyCommand: "true"})
	}
	id := queue
	h.logf("lanes: %d tasks at maxParallel %d, mergeLanes %d, %d worker(s)", cfg.Tasks, cfg.Parallel, lanes, workers)
	start := time.Now()
	run, err := h.Dev.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 30 * time.Minute},
		campaign.CampaignWorkflowName, campaign.CampaignInput{Tasks: list, MaxParallel: &cfg.Parallel, MergeLanes: &lanes, VerifyCommand: cfg.Verify})
	if err != nil {
		return r, err
	}
	var res campaign.CampaignResult
	if err := run.Get(ctx, &res); err != nil {
		return r, fmt.Errorf("campaign %s: %w", id, err)
	}
	r.wall = time.Since(start)
	if res.Status != campaign.CampaignComplete {
		return r, fmt.Errorf("campaign %s ended %s: %+v", id, res.Status, res.Tasks)
	}
	for _, w := range procs {
		c, _ := w.CPU()
		r.cpu = append(r.cpu, c)
	}
	v, err := h.Dev.Client.QueryWorkflow(ctx, id, "", workflows.StatusQueryName)
	if err == nil {
		err = v.Get(&r.st)
	}
	return r, err
}

// startLaneWorkers starts n worker processes on queue, each with its own
// workspace root and session dir, as on separate machines (each keeps its
// own object cache and tree copies).
func (h *Harness) startLaneWorkers(ctx context.Context, queue, baseURL, bare string, n int) ([]*WorkerProc, error) {
	var procs []*WorkerProc
	for i := range n {
		dir := filepath.Join(h.Dir, queue, fmt.Sprintf("worker-%d", i))
		w, err := h.StartWorkerProc(ctx, h.Dev, queue, baseURL, map[string]string{"RALPH_GIT": "remote", "RALPH_GIT_REMOTE": bare,
			"RALPH_CONCURRENT_ROUNDS": "16", "RALPH_WORKSPACE_ROOT": filepath.Join(dir, "workspaces"), "RALPH_SESSION_DIR": filepath.Join(dir, "sessions")})
		if err != nil {
			return procs, fmt.Errorf("worker %d of %d: %w", i+1, n, err)
		}
		procs = append(procs, w)
	}
	return procs, nil
}

// mostAtOnce is the most verifies whose spans overlap, from the records.
func mostAtOnce(vs []campaign.MergeVerify) int {
	most := 0
	for _, v := range vs {
		n := 0
		for _, w := range vs {
			end := w.Started.Add(time.Duration(w.DurationMs) * time.Millisecond)
			if !w.Started.After(v.Started) && end.After(v.Started) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}
