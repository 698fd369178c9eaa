package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
)

// CandidatesConfig sizes the round-candidates benchmark.
type CandidatesConfig struct {
	Rounds int   // rounds of each run (each a hand-off)
	Runs   int   // runs per candidate count
	Counts []int // candidates per round, one series each
}

// Candidates measures what several fresh agents per round cost in wall
// clock: runs of instant-model rounds at each candidate count, on one real
// worker, the round time being the run's wall clock over its rounds.
func (h *Harness) Candidates(ctx context.Context, cfg CandidatesConfig) (Section, error) {
	sec := Section{
		Title: "Round candidates: several fresh agents per round",
		Intro: fmt.Sprintf("One worker process (the real binary, `RALPH_GIT=local`, real bubblewrap) on the dev server; %d runs of %d rounds "+
			"per candidate count, every candidate of every round writing one file and handing off `continue` at once (an instant "+
			"scripted model), so the numbers are what the harness adds: the candidates' clones, their sessions side by side, "+
			"the choice and the adoption.", cfg.Runs, cfg.Rounds),
	}
	tbl := Table{Header: []string{"candidates", "round ms p50 (min–max)", "model calls per round", "× one candidate"}}
	var base time.Duration
	steps := map[int]stepTimes{}
	p50s := map[int]time.Duration{}
	for _, k := range cfg.Counts {
		steps[k] = stepTimes{}
		rounds, calls, err := h.candidateRuns(ctx, cfg, k, steps[k])
		if err != nil {
			tbl.Add(strconv.Itoa(k), "failed: "+err.Error())
			continue
		}
		p50 := Median(rounds)
		p50s[k] = p50
		if base == 0 {
			base = p50
		}
		tbl.Add(strconv.Itoa(k), spread(rounds), strconv.Itoa(calls/(cfg.Runs*cfg.Rounds)),
			fmt.Sprintf("%.2f", float64(p50)/float64(base)))
	}
	sec.Tables = []Table{tbl, stepsTable(cfg.Counts, steps)}
	sec.Goals = append(sec.Goals, candidatesGoalOf(p50s))
	sec.Notes = append(sec.Notes, "The steps table: the history's rows per round, the worker's per attempt (its Round steps log line). "+
		"Runs of a current worker adopt the chosen candidate in a local activity (Limits.CandidateAdoptLocal): no AdoptCandidate "+
		"activity, its time is inside \"between rounds\".")
	sec.Notes = append(sec.Notes, "A real round is as long as its slowest needed candidate: with a verified complete the rest are "+
		"cancelled at once, otherwise the round waits for every candidate. Tokens grow with the count (each candidate is a whole session).")
	return sec, nil
}

// candidatesGoal is SPEC 41's goal: a 3-candidate round at most 0.2 s more
// than a 1-candidate round with an instant model.
const candidatesGoal = 200 * time.Millisecond

// candidatesGoalOf judges the goal from the round p50 per candidate count.
func candidatesGoalOf(p50s map[int]time.Duration) Goal {
	g := Goal{What: fmt.Sprintf("a 3-candidate round at most %s more than a 1-candidate round (instant model)", candidatesGoal)}
	one, three := p50s[1], p50s[3]
	if one > 0 && three > 0 {
		g.Measured = fmt.Sprintf("round p50 %s ms against %s ms: %+.0f ms", ms(three), ms(one), float64(three-one)/float64(time.Millisecond))
		g.Met = three-one <= candidatesGoal
	}
	return g
}

// candidateRuns returns each run's time per round at k candidates, and
// the model calls the server answered; it adds where the rounds' time went
// (their histories and the worker's log) to steps.
func (h *Harness) candidateRuns(ctx context.Context, cfg CandidatesConfig, k int, steps stepTimes) ([]time.Duration, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			return toolCall("write_file", map[string]string{"path": fmt.Sprintf("r%d-c%d.txt", req.Round(), req.Candidate()), "content": "x\n"})
		}
		return submitContinue("wrote its file")
	}})
	defer model.Close()
	queue := h.name(fmt.Sprintf("candidates-%d", k))
	// Info: the worker logs each round's steps (addWorkerSteps).
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), map[string]string{"RALPH_GIT": "local", "RALPH_MAX_CANDIDATES": "8", "RALPH_LOG_LEVEL": "info"})
	if err != nil {
		return nil, 0, err
	}
	defer w.Stop()
	var perRound []time.Duration
	for i := range cfg.Runs {
		id := h.name(fmt.Sprintf("candidates-%d-%d", k, i))
		in := workflows.Input{Objective: "write files", Workspace: id, MaxRounds: &cfg.Rounds, Candidates: &k}
		start := time.Now()
		run, err := h.Dev.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 10 * time.Minute},
			workflows.WorkflowName, in)
		if err != nil {
			return nil, 0, err
		}
		var res workflows.Result
		if err := run.Get(ctx, &res); err != nil {
			return nil, 0, fmt.Errorf("run %s: %w", id, err)
		}
		if res.RoundsStarted != cfg.Rounds {
			return nil, 0, fmt.Errorf("run %s ended %s after %d rounds", id, res.Status, res.RoundsStarted)
		}
		perRound = append(perRound, time.Since(start)/time.Duration(cfg.Rounds))
		spans, err := historySpans(ctx, h.Dev.Client, id)
		if err != nil {
			return nil, 0, err
		}
		addHistorySteps(steps, spans)
	}
	if err := addWorkerSteps(steps, filepath.Join(h.Dir, queue+"-worker.log")); err != nil { // StartWorkerProc's log
		return nil, 0, err
	}
	h.logf("candidates: %d per round, %v per round", k, perRound)
	return perRound, len(model.Requests()), nil
}
