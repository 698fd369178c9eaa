package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/workerapp"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/deathsig"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/proc"
	"github.com/ralph-temporal/ralph/workflows"
)

// benchAPIKey is what the workers send to the scripted model server.
const benchAPIKey = "sk-bench-not-a-real-key"

// Target is one Temporal server the benchmarks run against.
type Target struct {
	Name      string // shown in tables: "dev server", "PostgreSQL server"
	Address   string
	Namespace string
	Client    client.Client
}

// Harness is what every benchmark shares.
type Harness struct {
	// Dir holds workspaces, session dirs and worker logs.
	Dir string
	// WorkerBin is the real worker binary (go build ./worker).
	WorkerBin string
	// Dev is the dev server; Cluster the PostgreSQL-backed server when given.
	Dev     Target
	DevPID  int // the dev server process, for its CPU time (0: unknown)
	Cluster *Target
	// Progress receives one line per step.
	Progress io.Writer
	// Tag makes workflow ids unique across invocations on a kept server.
	Tag string
	// Settings are worker settings every benchmark's workers get (before a
	// benchmark's own).
	Settings map[string]string

	mu  sync.Mutex
	seq int
}

func (h *Harness) logf(format string, args ...any) {
	fmt.Fprintf(h.Progress, "ralphbench: "+format+"\n", args...)
}

// name returns a fresh name with the given prefix (task queues, ids, dirs).
func (h *Harness) name(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	return fmt.Sprintf("%s-%s-%d", prefix, h.Tag, h.seq)
}

// workerEnv is the worker configuration every benchmark worker shares: the
// defaults of the real worker plus the scripted model and private dirs.
func (h *Harness) workerEnv(queue, baseURL string, extra map[string]string) map[string]string {
	dir := filepath.Join(h.Dir, queue)
	env := map[string]string{
		"RALPH_TASK_QUEUE": queue,
		// One deployment per queue (see devenv/integration's harness).
		"RALPH_DEPLOYMENT_NAME": queue,
		"RALPH_MODEL":           "bench-model",
		"OPENAI_BASE_URL":       baseURL,
		"OPENAI_API_KEY":        benchAPIKey,
		"RALPH_WORKSPACE_ROOT":  filepath.Join(dir, "workspaces"),
		"RALPH_SESSION_DIR":     filepath.Join(dir, "sessions"),
		"RALPH_LOG_LEVEL":       "warn",
		// Scripted benchmark rounds change nothing; the fingerprint is still
		// taken every round, but the idle budget must not end the runs early.
		"RALPH_MAX_IDLE_ROUNDS": "1000000",
	}
	for k, v := range h.Settings {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// InProc is a Ralph worker inside this process, wired by the worker
// binary's own code (workerapp.Start: client, codec, tracing, versioning,
// search attributes, options) plus the bare baseline, so both loops run
// with the same settings. Client is the worker's own client: start runs and
// read results with it (it decodes encrypted payloads).
type InProc struct {
	Queue  string
	Root   string // workspace root
	Client client.Client
	s      *workerapp.Started
}

// On is t with the worker's own client.
func (p *InProc) On(t Target) Target {
	t.Client = p.Client
	return t
}

// StartInProc starts an in-process worker on a fresh task queue of t, with
// the worker settings of every benchmark plus extra (for example an
// encryption key file or an OTLP endpoint).
func (h *Harness) StartInProc(t Target, prefix, baseURL string, eager bool, extra map[string]string) (*InProc, error) {
	queue := h.name(prefix)
	env := config.MapEnv(h.workerEnv(queue, baseURL, extra))
	env["TEMPORAL_ADDRESS"], env["TEMPORAL_NAMESPACE"] = t.Address, t.Namespace
	cfg, err := config.LoadWorker(nil, env, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(h.Progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := workerapp.Start(context.Background(), cfg, env, logger, workerapp.Hooks{
		Options:  func(o *worker.Options) { o.DisableEagerActivities = !eager },
		Register: RegisterBare,
	})
	if err != nil {
		return nil, fmt.Errorf("start in-process worker: %w", err)
	}
	return &InProc{Queue: queue, Root: cfg.Activities.WorkspaceRoot, Client: s.Client, s: s}, nil
}

// Stop drains and stops the in-process worker.
func (p *InProc) Stop() { p.s.Stop() }

// WorkerProc is the real worker binary running as a child process.
type WorkerProc struct {
	Queue string
	Root  string // workspace root
	Pid   int
	cmd   *exec.Cmd
	done  chan struct{}
}

// StartWorkerProc starts the worker binary against t on queue with the
// shared worker env (plus extra) and waits until it polls.
func (h *Harness) StartWorkerProc(ctx context.Context, t Target, queue, baseURL string, extra map[string]string) (*WorkerProc, error) {
	env := h.workerEnv(queue, baseURL, extra)
	env["TEMPORAL_ADDRESS"] = t.Address
	env["TEMPORAL_NAMESPACE"] = t.Namespace
	env["RALPH_LOG_FORMAT"] = "json"
	logPath := filepath.Join(h.Dir, queue+"-worker.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(h.WorkerBin)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v) // later entries win
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = childSysProcAttr()
	p := &WorkerProc{Queue: queue, Root: env["RALPH_WORKSPACE_ROOT"], cmd: cmd, done: make(chan struct{})}
	if err := deathsig.Go(cmd.Start, func() { _ = cmd.Wait(); close(p.done) }); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	p.Pid = cmd.Process.Pid
	readyCtx, cancelReady := context.WithTimeout(ctx, workerReadyTimeout)
	err = temporalserver.WaitPolling(readyCtx, t.Client, queue, p.Pid, p.done)
	cancelReady()
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("%w (worker log: %s)", err, logPath)
	}
	return p, nil
}

// Stop sends SIGTERM and waits (SIGKILL after 20 s).
func (p *WorkerProc) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.Kill()
	}
}

// Kill sends SIGKILL and waits until the process is reaped.
func (p *WorkerProc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Memory reads VmRSS and VmHWM (peak RSS) in KiB from /proc.
func (p *WorkerProc) Memory() (rssKiB, hwmKiB int64, err error) {
	status, err := proc.ReadStatus(p.Pid)
	if err != nil {
		return 0, 0, err
	}
	kib := func(key string) int64 {
		n, _ := strconv.ParseInt(strings.TrimSuffix(status[key], " kB"), 10, 64)
		return n
	}
	return kib("VmRSS"), kib("VmHWM"), nil
}

// CPU is the user+system CPU time the process has used so far.
func (p *WorkerProc) CPU() (time.Duration, error) { return ProcCPU(p.Pid) }

// ProcCPU is the user+system CPU time process pid has used so far (0 for
// the benchmark process itself).
func ProcCPU(pid int) (time.Duration, error) {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0, err
	}
	return time.Duration(st.UTime+st.STime) * time.Second / proc.ClockTicks, nil
}

// MachineCPU reads the machine's busy and total CPU time (all cores) from
// /proc/stat; the busy share between two readings is how loaded it was.
func MachineCPU() (busy, total int64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total
}

// StartRalph starts a Ralph run with raw JSON input, as the temporal CLI does.
func StartRalph(ctx context.Context, t Target, queue, id string, input any) (client.WorkflowRun, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, err
	}
	return t.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: queue, WorkflowExecutionTimeout: 15 * time.Minute,
	}, workflows.WorkflowName, json.RawMessage(raw))
}

// ralphInput is the workflow input of the contract.
type ralphInput struct {
	Objective  string `json:"objective"`
	MaxRounds  int    `json:"maxRounds,omitempty"`
	Workspace  string `json:"workspace,omitempty"`
	MaxTokens  int    `json:"maxTokens,omitempty"`
	MaxMinutes int    `json:"maxMinutes,omitempty"`
}

// RunHistory is one workflow run of a continue-as-new chain.
type RunHistory struct {
	RunID  string
	Events []*historypb.HistoryEvent
	// Length and SizeBytes are the server's own accounting (what its
	// history limits are checked against), from DescribeWorkflowExecution.
	Length    int64
	SizeBytes int64
}

// Chain reads every run of a workflow id from firstRunID, following
// continue-as-new.
func Chain(ctx context.Context, t Target, id, firstRunID string) ([]RunHistory, error) {
	var out []RunHistory
	runID := firstRunID
	for i := 0; runID != "" && i < 1000; i++ {
		rh := RunHistory{RunID: runID}
		iter := t.Client.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			if err != nil {
				return nil, fmt.Errorf("history of %s/%s: %w", id, runID, err)
			}
			rh.Events = append(rh.Events, ev)
		}
		desc, err := t.Client.DescribeWorkflow(ctx, id, runID)
		if err != nil {
			return nil, err
		}
		rh.Length = desc.RawResponse.GetWorkflowExecutionInfo().GetHistoryLength()
		rh.SizeBytes = desc.RawResponse.GetWorkflowExecutionInfo().GetHistorySizeBytes()
		out = append(out, rh)
		runID = ""
		if n := len(rh.Events); n > 0 {
			if a := rh.Events[n-1].GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				runID = a.GetNewExecutionRunId()
			}
		}
	}
	return out, nil
}

// RoundTimes are the server-side timestamps of the activities of one
// workflow (across its runs) whose type is activityType.
type RoundTimes struct {
	Scheduled, Started, Completed []time.Time
	Run                           []int // index of the workflow run in the chain
	Closed                        time.Time
	// WorkflowTaskWaits are WorkflowTaskScheduled → WorkflowTaskStarted of
	// every workflow task but each run's first (how long the decision after
	// a round waited for a worker); FirstTaskWaits are the first ones.
	WorkflowTaskWaits, FirstTaskWaits []time.Duration
	// WorkflowTaskRuns are WorkflowTaskStarted → WorkflowTaskCompleted of
	// the same tasks: the worker's turn at the decision, its reply included.
	WorkflowTaskRuns []time.Duration
}

// Timing extracts RoundTimes from a chain.
func Timing(chain []RunHistory, activityType string) RoundTimes {
	var rt RoundTimes
	for r, run := range chain {
		index := map[int64]int{} // scheduled event id -> round index
		wftScheduled := map[int64]time.Time{}
		wftStarted := map[int64]time.Time{} // started event id -> time, all but the run's first task
		for _, ev := range run.Events {
			at := ev.GetEventTime().AsTime()
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				wftScheduled[ev.GetEventId()] = at
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				if s, ok := wftScheduled[ev.GetWorkflowTaskStartedEventAttributes().GetScheduledEventId()]; ok {
					if len(wftScheduled) == 1 {
						rt.FirstTaskWaits = append(rt.FirstTaskWaits, at.Sub(s))
					} else {
						rt.WorkflowTaskWaits = append(rt.WorkflowTaskWaits, at.Sub(s))
						wftStarted[ev.GetEventId()] = at
					}
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if s, ok := wftStarted[ev.GetWorkflowTaskCompletedEventAttributes().GetStartedEventId()]; ok {
					rt.WorkflowTaskRuns = append(rt.WorkflowTaskRuns, at.Sub(s))
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activityType {
					index[ev.GetEventId()] = len(rt.Scheduled)
					rt.Scheduled = append(rt.Scheduled, at)
					rt.Started = append(rt.Started, time.Time{})
					rt.Completed = append(rt.Completed, time.Time{})
					rt.Run = append(rt.Run, r)
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				if i, ok := index[ev.GetActivityTaskStartedEventAttributes().GetScheduledEventId()]; ok {
					rt.Started[i] = at
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				if i, ok := index[ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; ok {
					rt.Completed[i] = at
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
				enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
				rt.Closed = at
			}
		}
	}
	return rt
}

// Periods are the per-round wall times: from one round's scheduling to the
// next one's, and for the last round to the workflow's close.
func (rt RoundTimes) Periods() []time.Duration {
	var out []time.Duration
	for i, s := range rt.Scheduled {
		end := rt.Closed
		if i+1 < len(rt.Scheduled) {
			end = rt.Scheduled[i+1]
		}
		if !end.IsZero() {
			out = append(out, end.Sub(s))
		}
	}
	return out
}

// SplitPeriods separates the rounds whose period spans a continue-as-new
// (the next round runs in the next workflow run) from the others.
func (rt RoundTimes) SplitPeriods() (within, across []time.Duration) {
	for i, p := range rt.Periods() {
		if i+1 < len(rt.Run) && rt.Run[i+1] != rt.Run[i] {
			across = append(across, p)
		} else {
			within = append(within, p)
		}
	}
	return within, across
}

// Executions are started-to-completed times of the rounds.
func (rt RoundTimes) Executions() []time.Duration {
	var out []time.Duration
	for i := range rt.Scheduled {
		if !rt.Started[i].IsZero() && !rt.Completed[i].IsZero() {
			out = append(out, rt.Completed[i].Sub(rt.Started[i]))
		}
	}
	return out
}

// workerReadyTimeout bounds the wait for a started worker to poll.
const workerReadyTimeout = 60 * time.Second

// ---- scripted model helpers ----

func submitContinue(summary string) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{
		Status: "continue", Summary: summary, Evidence: []string{}, NextSteps: []string{"keep going"},
	}))
}

func submitComplete(summary string) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{
		Status: "complete", Summary: summary, Evidence: []string{summary}, NextSteps: []string{},
	}))
}

func toolCall(name string, args any) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.CallJSON(name, args))
}

// parentPID is the parent of pid (0 when it is gone).
func parentPID(pid int) int {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return 0
	}
	return st.PPID
}

// stickyTimeouts counts workflow tasks of a chain that timed out waiting on
// a sticky queue (ScheduleToStart) and were rescheduled on the normal queue.
func stickyTimeouts(chain []RunHistory) int {
	n := 0
	for _, rh := range chain {
		for _, ev := range rh.Events {
			if a := ev.GetWorkflowTaskTimedOutEventAttributes(); a != nil && a.GetTimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START {
				n++
			}
		}
	}
	return n
}
