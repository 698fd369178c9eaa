package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/workerapp"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
)

// CancelConfig sizes the cancellation benchmark.
type CancelConfig struct {
	Samples int
}

// sleepCommand records the shell's and the sleep's pids, then waits on the
// sleep: the round is busy in run_command for 300 s unless cancelled.
const sleepCommand = `echo $$ >> pids.txt; sleep 300 & echo $! >> pids.txt; wait`

// Cancel measures cancel-to-closed while run_command runs `sleep 300`, with
// the default heartbeat settings, on the real worker binary.
func (h *Harness) Cancel(ctx context.Context, cfg CancelConfig) (Section, error) {
	def := activities.DefaultLimits()
	sec := Section{
		Title: "3. Cancellation latency",
		Intro: fmt.Sprintf("One worker process with default settings (heartbeat timeout %d s, so a heartbeat every %s; "+
			"heartbeat throttle %s), dev server. Each sample starts a run whose round runs `sleep 300` through run_command, waits "+
			"until the command runs, waits a further 0–1 s (spread evenly over the samples, so the cancel lands at every phase of the "+
			"heartbeat cycle), then cancels the workflow and measures until `run.Get` returns the cancellation: the workflow is closed, "+
			"which with WaitForCancellation happens only after the round has stopped. %d samples, one at a time.",
			def.HeartbeatTimeoutSeconds, config.HeartbeatInterval(def.HeartbeatTimeoutSeconds), workerapp.HeartbeatThrottle, cfg.Samples),
	}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			return toolCall("run_command", map[string]any{"command": sleepCommand})
		}
		return submitComplete("the sleep ended")
	}})
	defer model.Close()
	queue := h.name("cancel")
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), nil)
	if err != nil {
		return sec, err
	}
	defer w.Stop()

	var total, toActivity, toClose []time.Duration
	leftAlive := 0
	for i := range cfg.Samples {
		if err := ctx.Err(); err != nil {
			return sec, err
		}
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		lat, srvAct, srvClose, alive, err := h.cancelSample(sctx, w, i, cfg.Samples)
		cancel()
		if err != nil {
			return sec, fmt.Errorf("sample %d: %w", i+1, err)
		}
		h.logf("cancel: sample %d/%d: %s", i+1, cfg.Samples, lat.Round(time.Millisecond))
		total = append(total, lat)
		toActivity = append(toActivity, srvAct)
		toClose = append(toClose, srvClose)
		leftAlive += alive
	}
	goal := "met"
	if Percentile(total, 95) >= 3*time.Second {
		goal = "not met"
	}
	t1 := Table{Header: []string{"samples", "p50 s", "p95 s", "min s", "max s", "mean s", "goal p95 < 3 s", "command processes alive at close"}}
	t1.Add(strconv.Itoa(len(total)), secs(Median(total)), secs(Percentile(total, 95)), secs(Min(total)), secs(Max(total)),
		secs(Mean(total)), goal, strconv.Itoa(leftAlive))
	t2 := Table{Header: []string{"server-side step (event timestamps)", "p50 s", "p95 s", "max s"}}
	t2.Add("WorkflowExecutionCancelRequested → ActivityTaskCanceled", secs(Median(toActivity)), secs(Percentile(toActivity, 95)), secs(Max(toActivity)))
	t2.Add("ActivityTaskCanceled → WorkflowExecutionCanceled", secs(Median(toClose)), secs(Percentile(toClose, 95)), secs(Max(toClose)))
	sec.Tables = []Table{t1, t2}
	sec.Notes = append(sec.Notes,
		"A cancel reaches a running round through the answer to its next heartbeat; the worker heartbeats every second and does not throttle that (workerapp.HeartbeatThrottle), so the wait is at most about one heartbeat interval plus the kill of the command's process group and two workflow tasks.")
	return sec, nil
}

func (h *Harness) cancelSample(ctx context.Context, w *WorkerProc, i, n int) (lat, toActivity, toClose time.Duration, alive int, err error) {
	id := h.name("cancel-run")
	run, err := StartRalph(ctx, h.Dev, w.Queue, id, ralphInput{Objective: "sleep for a long time", MaxRounds: 1, Workspace: id})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	firstRunID := run.GetRunID() // Get follows continue-as-new and moves GetRunID on
	pids, err := proc.WaitPIDFile(ctx, filepath.Join(w.Root, id, "pids.txt"), 2, 60*time.Second)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	time.Sleep(time.Duration(i) * time.Second / time.Duration(n))
	t0 := time.Now()
	if err := h.Dev.Client.CancelWorkflow(ctx, id, ""); err != nil {
		return 0, 0, 0, 0, err
	}
	err = run.Get(ctx, nil)
	lat = time.Since(t0)
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		return 0, 0, 0, 0, fmt.Errorf("run %s ended with %v, want canceled", id, err)
	}
	for _, pid := range pids {
		if proc.Alive(pid) {
			alive++
		}
	}
	chain, err := Chain(ctx, h.Dev, id, firstRunID)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	var requested, actCanceled, closed time.Time
	for _, ev := range chain[len(chain)-1].Events {
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
			requested = at
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			actCanceled = at
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
			closed = at
		}
	}
	if requested.IsZero() || actCanceled.IsZero() || closed.IsZero() {
		return 0, 0, 0, 0, fmt.Errorf("run %s: cancel events missing from history", id)
	}
	return lat, actCanceled.Sub(requested), closed.Sub(actCanceled), alive, nil
}
