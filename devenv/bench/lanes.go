package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
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
}

// Lanes measures the same campaign at several mergeLanes on one worker:
// loops of about cfg.Loop that land independent files, a verify that only
// waits (no CPU), so the queue's verifies are the campaign's clock.
func (h *Harness) Lanes(ctx context.Context, cfg LanesConfig) (Section, error) {
	sec := Section{
		Title: "Campaigns: speculative merge lanes",
		Intro: fmt.Sprintf("One worker process (the real binary, `RALPH_GIT=remote` on a local bare repository, real bubblewrap, "+
			"`RALPH_CONCURRENT_ROUNDS=16`) on the dev server; a campaign of %d independent tasks at maxParallel %d, each one round whose "+
			"scripted model answers after %s, writes one file and reports `complete` (each task's own verify `true`); the campaign's verify "+
			"command is `%s`. The same campaign at each mergeLanes; wall clock from the start to the result.", cfg.Tasks, cfg.Parallel, cfg.Loop, cfg.Verify),
	}
	tbl := Table{Header: []string{"mergeLanes", "wall clock s", "against the first row", "verifies (discarded)", "verify step ms p50 (min–max)", "most verifies at once"}}
	var base float64
	for _, lanes := range cfg.Lanes {
		wall, st, err := h.lanesRun(ctx, cfg, lanes)
		if err != nil {
			tbl.Add(strconv.Itoa(lanes), "failed: "+err.Error())
			continue
		}
		if base == 0 {
			base = wall.Seconds()
		}
		var took []time.Duration
		for _, v := range st.Verifies {
			if v.Discarded == "" {
				took = append(took, time.Duration(v.DurationMs)*time.Millisecond)
			}
		}
		tbl.Add(strconv.Itoa(lanes), secs(wall), ratio(wall.Seconds(), base),
			fmt.Sprintf("%d (%d)", st.VerifyCount, st.VerifyDiscarded), spread(took), strconv.Itoa(mostAtOnce(st.Verifies)))
	}
	sec.Tables = []Table{tbl}
	sec.Notes = append(sec.Notes, "goal (SPEC 41): mergeLanes 4 at most 0.4× of mergeLanes 1.",
		"verify step: the campaign's own record of each verify (its merge step's start to its result; a lane's verify step alone); the last 20 only.")
	return sec, nil
}

func (h *Harness) lanesRun(ctx context.Context, cfg LanesConfig, lanes int) (time.Duration, campaign.CampaignStatus, error) {
	var st campaign.CampaignStatus
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	bare := filepath.Join(h.Dir, h.name("lanes-remote")+".git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		return 0, st, fmt.Errorf("git init: %v: %s", err, out)
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
	queue := h.name(fmt.Sprintf("lanes-%d", lanes))
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), map[string]string{"RALPH_GIT": "remote", "RALPH_GIT_REMOTE": bare,
		"RALPH_CONCURRENT_ROUNDS": "16"})
	if err != nil {
		return 0, st, err
	}
	defer w.Stop()
	var list []campaign.Task
	for i := range cfg.Tasks {
		list = append(list, campaign.Task{ID: fmt.Sprintf("t%d", i), Objective: fmt.Sprintf("write file %d", i), VerifyCommand: "true"})
	}
	id := h.name(fmt.Sprintf("lanes-%d", lanes))
	h.logf("lanes: %d tasks at maxParallel %d, mergeLanes %d", cfg.Tasks, cfg.Parallel, lanes)
	start := time.Now()
	run, err := h.Dev.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 30 * time.Minute},
		campaign.CampaignWorkflowName, campaign.CampaignInput{Tasks: list, MaxParallel: &cfg.Parallel, MergeLanes: &lanes, VerifyCommand: cfg.Verify})
	if err != nil {
		return 0, st, err
	}
	var res campaign.CampaignResult
	if err := run.Get(ctx, &res); err != nil {
		return 0, st, fmt.Errorf("campaign %s: %w", id, err)
	}
	wall := time.Since(start)
	if res.Status != campaign.CampaignComplete {
		return 0, st, fmt.Errorf("campaign %s ended %s: %+v", id, res.Status, res.Tasks)
	}
	v, err := h.Dev.Client.QueryWorkflow(ctx, id, "", workflows.StatusQueryName)
	if err == nil {
		err = v.Get(&st)
	}
	return wall, st, err
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
