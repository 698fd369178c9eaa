package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// CampaignConfig sizes the campaign benchmark.
type CampaignConfig struct {
	Tasks    int   // one-round tasks per campaign
	Parallel []int // maxParallel values, one campaign each
}

// Campaign measures a campaign of one-round tasks at several maxParallel
// values on the real worker: the wall clock, merges per minute, and the
// merge queue's own cost per merge beside the verify command's.
func (h *Harness) Campaign(ctx context.Context, cfg CampaignConfig) (Section, error) {
	sec := Section{
		Title: "Campaigns: the merge queue",
		Intro: fmt.Sprintf("One worker process (the real binary, `RALPH_GIT=remote` on a local bare repository, real bubblewrap) on the dev server; "+
			"a campaign of %d independent tasks, each one round whose scripted model writes one file and reports `complete`; the campaign's "+
			"verify command is `true`. From the campaign's history: the start to the result, and each MergeTask's execution; the verify's "+
			"own duration is the one MergeTask records.", cfg.Tasks),
	}
	tbl := Table{Header: []string{"maxParallel", "wall clock s", "merges per minute", "MergeTask ms p50 (min–max)", "verify ms p50", "queue's own ms p50"}}
	for _, p := range cfg.Parallel {
		row, err := h.campaignRun(ctx, cfg.Tasks, p)
		if err != nil {
			tbl.Add(strconv.Itoa(p), "failed: "+err.Error())
			continue
		}
		tbl.Add(append([]string{strconv.Itoa(p)}, row...)...)
	}
	sec.Tables = []Table{tbl}
	sec.Notes = append(sec.Notes, "queue's own cost: a MergeTask's execution less its verify command: the fresh scratch clone, "+
		"fetching the integration and task branches, the --no-ff merge, the diff stat, the compare-and-swap push.")
	return sec, nil
}

func (h *Harness) campaignRun(ctx context.Context, tasks, parallel int) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	bare := filepath.Join(h.Dir, h.name("campaign-remote")+".git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", bare).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			return toolCall("write_file", map[string]string{"path": fmt.Sprintf("file-%d.txt", req.Index), "content": "x\n"})
		}
		return submitComplete("wrote its file")
	}})
	defer model.Close()
	queue := h.name(fmt.Sprintf("campaign-p%d", parallel))
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), map[string]string{"RALPH_GIT": "remote", "RALPH_GIT_REMOTE": bare})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var list []campaign.Task
	for i := range tasks {
		list = append(list, campaign.Task{ID: fmt.Sprintf("t%d", i), Objective: fmt.Sprintf("write file %d", i)})
	}
	id := h.name(fmt.Sprintf("campaign-p%d", parallel))
	h.logf("campaign: %d tasks at maxParallel %d", tasks, parallel)
	start := time.Now()
	run, err := h.Dev.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 20 * time.Minute},
		campaign.CampaignWorkflowName, campaign.CampaignInput{Tasks: list, MaxParallel: &parallel, VerifyCommand: "true"})
	if err != nil {
		return nil, err
	}
	var res campaign.CampaignResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", id, err)
	}
	wall := time.Since(start)
	if res.Status != campaign.CampaignComplete {
		return nil, fmt.Errorf("campaign %s ended %s: %+v", id, res.Status, res.Tasks)
	}
	merges, verifies, err := h.mergeTimes(ctx, id, run.GetRunID())
	if err != nil {
		return nil, err
	}
	own := make([]time.Duration, len(merges))
	for i := range merges {
		own[i] = merges[i] - verifies[i]
	}
	perMinute := float64(len(merges)) / wall.Minutes()
	return []string{secs(wall), strconv.FormatFloat(perMinute, 'f', 1, 64), spread(merges), ms(Median(verifies)), ms(Median(own))}, nil
}

// mergeTimes are each landed MergeTask's execution and its verify's own
// duration, from the campaign's history.
func (h *Harness) mergeTimes(ctx context.Context, id, runID string) (merges, verifies []time.Duration, err error) {
	chain, err := Chain(ctx, h.Dev, id, runID)
	if err != nil {
		return nil, nil, err
	}
	rt := Timing(chain, activities.MergeTaskName)
	for i := range rt.Started {
		merges = append(merges, rt.Completed[i].Sub(rt.Started[i]))
	}
	for _, run := range chain {
		scheduled := map[int64]bool{}
		for _, ev := range run.Events {
			if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == activities.MergeTaskName {
				scheduled[ev.GetEventId()] = true
			}
			a := ev.GetActivityTaskCompletedEventAttributes()
			if ev.GetEventType() != enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED || !scheduled[a.GetScheduledEventId()] {
				continue
			}
			var out activities.MergeTaskOutput
			if err := converter.GetDefaultDataConverter().FromPayloads(a.GetResult(), &out); err != nil {
				return nil, nil, err
			}
			var d time.Duration
			if out.Verification != nil {
				d = time.Duration(out.Verification.DurationMs) * time.Millisecond
			}
			verifies = append(verifies, d)
		}
	}
	if len(merges) != len(verifies) || len(merges) == 0 {
		raw, _ := json.Marshal(rt)
		return nil, nil, fmt.Errorf("campaign %s: %d merges timed, %d results read (%s)", id, len(merges), len(verifies), raw)
	}
	return merges, verifies, nil
}
