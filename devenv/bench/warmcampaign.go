package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/toolcache"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// WarmCampaignConfig sizes the warm-verifies campaign.
type WarmCampaignConfig struct {
	Repo     string // a Go module with dependencies (this project's repository)
	Tasks    int    // tasks, each merged by a verify of its own
	Parallel int    // maxParallel
	Command  string // the campaign's verify command
}

// WarmCampaign measures warm verifies as SPEC 41 states the benchmark: a
// campaign over a copy of Repo on the real worker (real bubblewrap, the
// proxy network, its merge verifies starting from the campaign line's tool
// caches), each task adding a file to the report package, then the same
// command run on the host, warm, on each tree the campaign verified, in
// the same order.
func (h *Harness) WarmCampaign(ctx context.Context, cfg WarmCampaignConfig) (Section, error) {
	sec := Section{
		Title: "Warm verifies: a campaign over a copy of this repository",
		Intro: fmt.Sprintf("One worker process (the real binary, `RALPH_GIT=remote` on a bare copy of this repository, real bubblewrap as uid "+
			"65534, the proxy network) on the dev server runs a campaign of %d tasks at maxParallel %d, each task's scripted model adding a "+
			"file to `report/` (so each merge rebuilds the package and what imports it); the campaign's verify is `%s`. Each merge verify's "+
			"time is its record in the campaign's status (the tool cache copy included); beside it, the same command on the host, in a "+
			"clone with the host's own caches, on the very tree that verify checked, in the same order. The first merge is cold on both sides.",
			cfg.Tasks, cfg.Parallel, cfg.Command),
	}
	ctx, cancel := context.WithTimeout(ctx, 40*time.Minute)
	defer cancel()
	dir := filepath.Join(h.Dir, h.name("warmcampaign"))
	defer toolcache.RemoveAll(dir)
	bare := filepath.Join(dir, "remote.git")
	if out, err := exec.CommandContext(ctx, "git", "clone", "-q", "--bare", "--single-branch", "--branch", "main", cfg.Repo, bare).CombinedOutput(); err != nil {
		return sec, fmt.Errorf("clone %s: %v: %s", cfg.Repo, err, out)
	}
	verifies, err := h.warmCampaignRun(ctx, cfg, dir, bare)
	if err != nil {
		return sec, err
	}
	host, err := hostVerifies(ctx, bare, filepath.Join(dir, "host"), cfg.Command, verifies)
	if err != nil {
		return sec, err
	}
	tbl := Table{Header: []string{"merge", "tasks", "jail verify s", "host warm s", "jail / host"}}
	var ratios []float64
	for i, v := range verifies {
		jail := time.Duration(v.DurationMs) * time.Millisecond
		ratio := jail.Seconds() / host[i].Seconds()
		if i > 0 {
			ratios = append(ratios, ratio)
		}
		tbl.Add(fmt.Sprint(i), fmt.Sprint(v.Tasks), fmt.Sprintf("%.2f", jail.Seconds()), fmt.Sprintf("%.2f", host[i].Seconds()), fmt.Sprintf("%.2f", ratio))
	}
	sec.Tables = append(sec.Tables, tbl)
	sec.Goals = append(sec.Goals, warmGoalOf(ratios))
	return sec, nil
}

// warmCampaignRun runs the campaign and returns its passing merge verifies
// in the order they ran.
func (h *Harness) warmCampaignRun(ctx context.Context, cfg WarmCampaignConfig, dir, bare string) ([]campaign.MergeVerify, error) {
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			return toolCall("write_file", map[string]string{"path": fmt.Sprintf("report/zz_warm_%d.go", req.Index),
				"content": fmt.Sprintf("package report\n\n// warmCampaign%d is a task's change.\nconst warmCampaign%d = %d\n", req.Index, req.Index, req.Index)})
		}
		return submitComplete("added its file")
	}})
	defer model.Close()
	queue := h.name("warmcampaign")
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), map[string]string{"RALPH_GIT": "remote", "RALPH_GIT_REMOTE": bare,
		"RALPH_WORKSPACE_ROOT": filepath.Join(dir, "workspaces"), "RALPH_SESSION_DIR": filepath.Join(dir, "sessions")})
	if w != nil {
		defer w.Stop()
	}
	if err != nil {
		return nil, err
	}
	var tasks []campaign.Task
	for i := range cfg.Tasks {
		tasks = append(tasks, campaign.Task{ID: fmt.Sprintf("t%d", i), Objective: fmt.Sprintf("add file %d to the report package", i), VerifyCommand: "true"})
	}
	h.logf("warm campaign: %d tasks, verify %q", cfg.Tasks, cfg.Command)
	run, err := h.Dev.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue, WorkflowExecutionTimeout: 40 * time.Minute},
		campaign.CampaignWorkflowName, campaign.CampaignInput{Tasks: tasks, MaxParallel: &cfg.Parallel, VerifyCommand: cfg.Command})
	if err != nil {
		return nil, err
	}
	var res campaign.CampaignResult
	if err := run.Get(ctx, &res); err != nil {
		return nil, fmt.Errorf("campaign %s: %w", queue, err)
	}
	if res.Status != campaign.CampaignComplete {
		return nil, fmt.Errorf("campaign %s ended %s: %+v", queue, res.Status, res.Tasks)
	}
	v, err := h.Dev.Client.QueryWorkflow(ctx, queue, "", workflows.StatusQueryName)
	if err != nil {
		return nil, err
	}
	var st campaign.CampaignStatus
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	var passed []campaign.MergeVerify
	for _, mv := range st.Verifies {
		if mv.Passed && mv.Commit != "" {
			passed = append(passed, mv)
		}
	}
	slices.SortFunc(passed, func(a, b campaign.MergeVerify) int { return a.Started.Compare(b.Started) })
	if len(passed) == 0 {
		return nil, fmt.Errorf("campaign %s recorded no passing verify: %+v", queue, st.Verifies)
	}
	return passed, nil
}

// hostVerifies runs command on the host in a clone at dir, on each
// verified tree in turn, with caches of its own (warm after the first).
func hostVerifies(ctx context.Context, bare, dir, command string, verifies []campaign.MergeVerify) ([]time.Duration, error) {
	if out, err := exec.CommandContext(ctx, "git", "clone", "-q", bare, dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("clone for the host: %v: %s", err, out)
	}
	cache := dir + "-cache"
	env := append(os.Environ(), toolcache.Env(cache)...)
	var took []time.Duration
	for _, v := range verifies {
		if out, err := exec.CommandContext(ctx, "git", "-C", dir, "checkout", "-q", "--detach", v.Commit).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("host checkout %s: %v: %s", v.Commit, err, out)
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, "bash", "-c", command)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("host verify of %s: %v: %s", v.Commit, err, tail(string(out), 2000))
		}
		took = append(took, time.Since(start))
	}
	return took, nil
}
