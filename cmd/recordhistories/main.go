// Command recordhistories records the histories that workflows/replay_test.go
// replays. It runs the real stack — a Temporal dev server, a worker with the
// real activities and a scripted OpenAI-compatible model — through the main
// paths (complete, blocked, budget-limited, round-failed, cancelled,
// continue-as-new, invalid input, invalid report, verified, stopped, paused
// and resumed, the token, time and idle budgets and the budget floor, the
// reviewer's approve and revise, a deferred round with its durable wait, a
// stop during such a wait, a fallback model) and writes each run's
// history as JSON.
//
// The corpus only grows: each recording goes into a NEW directory
// <out>/<name> (default name: today's date and this build's id), which must
// not exist yet, with a SHA256SUMS manifest the replay test checks. Earlier
// directories are never touched, so every release's histories keep replaying
// against all later code.
//
//	go run ./cmd/recordhistories -out workflows/testdata/histories [-name 2026-12-01-feature] [-only a,b]
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/starterapp"
	"github.com/ralph-temporal/ralph/app/workerapp"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/buildid"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/historyfile"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
)

const (
	taskQueue = "record-histories"
	// invalidReportQueue is served by a worker whose round returns a report
	// the workflow must refuse: the real agent validates every report before
	// it returns, so only a stand-in round can record that path.
	invalidReportQueue = "record-histories-invalid-report"
	// pinnedQueue and autoUpgradeQueue are served by versioned workers, each
	// queue its own Worker Deployment (docs/operations.md: one deployment per
	// set of task queues): RALPH_VERSIONING_BEHAVIOR pinned and auto-upgrade.
	pinnedQueue      = "record-histories-pinned"
	autoUpgradeQueue = "record-histories-auto-upgrade"
	// rewindQueue is served by a worker the rewind-fast scenario stops
	// while it resets the run.
	rewindQueue = "record-histories-rewind"
)

// suggestBytes is the history size at which the dev server suggests a
// continue-as-new.
const suggestBytes = 2_000_000

// The versioned workers' versions: the pinned deployment's build A serves
// the runs; build B becomes current during the upgrade scenario's round 1.
var (
	pinnedA     = worker.WorkerDeploymentVersion{DeploymentName: "record-pinned", BuildID: "build-a"}
	pinnedB     = worker.WorkerDeploymentVersion{DeploymentName: "record-pinned", BuildID: "build-b"}
	autoUpgrade = worker.WorkerDeploymentVersion{DeploymentName: "record-auto-upgrade", BuildID: "build-a"}
)

func main() {
	out := flag.String("out", "workflows/testdata/histories", "the corpus: the new directory is created under it")
	name := flag.String("name", "", "the new directory's name (default: <date>-<build id>); it must not exist")
	only := flag.String("only", "", "comma-separated scenarios to record (default: all)")
	flag.Parse()
	if *name == "" {
		id, err := buildid.Default()
		if err != nil {
			fmt.Fprintln(os.Stderr, "recordhistories:", err)
			os.Exit(1)
		}
		*name = time.Now().UTC().Format("2006-01-02") + "-" + shortID(id)
	}
	if err := record(*out, *name, *only); err != nil {
		fmt.Fprintln(os.Stderr, "recordhistories:", err)
		os.Exit(1)
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// scenario is one recorded run: its input and, for cancel, when to cancel.
type scenario struct {
	name   string
	input  string
	cancel bool
	// updates are sent in order once the first round has started its command.
	updates []update
	// queue overrides the task queue (the invalid-report stand-in).
	queue string
	// slow scenarios (the time budget) run alongside the others.
	slow bool
	// continues: the run must cross a continue-as-new.
	continues bool
	// stopWhenWaiting sends a stop once the run waits after a deferred round.
	stopWhenWaiting bool
	// upgrade: once round 1 started its command, build B of the pinned
	// deployment starts and becomes current, then the rounds are released.
	upgrade bool
	// rewind: once round 2 started its command, `starter rewind --round 1`
	// resets the run; the original run and the reset run are recorded.
	rewind bool
	// rewindFast: as rewind, but no worker polls while the run is reset and
	// signalled, so the reset run finds the signal there (recordRewindFast).
	rewindFast bool
	// heldContinues: paused after round 1, the run is signalled rewound and
	// described until the server suggests a continue-as-new; the next run
	// is resumed (holdUntilContinued).
	heldContinues bool
	// approval: the run awaits approval after round 1 (guided, then
	// rejected) and after round 2 (approved).
	approval bool
	// script plays the model for this scenario's requests (nil: every round
	// hands off with continue); play finds it by the scenario's tag.
	script func(req fakeopenai.Request) fakeopenai.Response
}

// update is one operator update a scenario sends.
type update struct {
	name string
	args []any
}

// invalidRound stands in for RunRound on invalidReportQueue: its report
// breaks the report rules (an untrimmed summary), which the workflow checks
// again across the seam.
func invalidRound(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
	return activities.RoundOutput{
		Report:    report.Report{Status: report.StatusContinue, Summary: " untrimmed summary ", Evidence: []string{}, NextSteps: []string{"go on"}},
		SessionID: "invalid-report-" + activity.GetInfo(ctx).ActivityID,
	}, nil
}

func record(parent, name, only string) error {
	out, stage, err := newStage(parent, name)
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	wanted, err := selectScenarios(only)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "ralph-record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The server suggests a continue-as-new at 2 MB of history (4 MB by
	// default): the held-continues scenario's describes reach it in a few
	// calls; every other scenario stays far below.
	dev, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{Output: os.Stderr,
		DynamicConfig: append(temporalserver.DynamicConfig(), fmt.Sprintf("limit.historySize.suggestContinueAsNew=%d", suggestBytes))})
	if err != nil {
		return fmt.Errorf("start the dev server: %w", err)
	}
	defer dev.Stop()
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: play})
	defer model.Close()
	// Every event goes to a local receiver, so the notifications are recorded.
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hook.Close()
	cfg := recordConfig(tmp, model.BaseURL(), hook.URL)

	c, err := dev.Dial(ctx, client.Options{})
	if err != nil {
		return fmt.Errorf("dial the dev server: %w", err)
	}
	defer c.Close()
	r, stop, err := startWorkers(ctx, c, cfg)
	defer stop()
	if err != nil {
		return err
	}
	r.out = stage
	r.starterEnv = config.MapEnv{"RALPH_TASK_QUEUE": taskQueue}
	for _, kv := range dev.Env() {
		k, v, _ := strings.Cut(kv, "=")
		r.starterEnv[k] = v
	}

	if err := r.runAll(ctx, wanted); err != nil {
		return err
	}
	if err := writeManifest(stage); err != nil {
		return err
	}
	if err := os.Rename(stage, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "recorded %d scenario(s) into %s\n", len(wanted), out)
	return nil
}

// selectScenarios returns the scenarios only names (comma-separated), or
// every scenario when only is empty.
func selectScenarios(only string) ([]scenario, error) {
	var wanted []scenario
	for _, sc := range scenarios() {
		if only == "" || slices.Contains(strings.Split(only, ","), sc.name) {
			wanted = append(wanted, sc)
		}
	}
	if len(wanted) == 0 {
		return nil, fmt.Errorf("-only %q names no scenario", only)
	}
	return wanted, nil
}

// newStage checks that parent/name is a new directory and creates the
// staging directory beside it: a recording goes there and is renamed at the
// end, so a failed recording leaves no half-filled release behind.
func newStage(parent, name string) (out, stage string, err error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return "", "", fmt.Errorf("-name %q: want a plain directory name", name)
	}
	out = filepath.Join(parent, name)
	if _, err := os.Lstat(out); err == nil {
		return "", "", fmt.Errorf("%s exists: recorded histories are never overwritten; record into a new directory (-name)", out)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", "", err
	}
	stage, err = os.MkdirTemp(parent, ".recording-")
	return out, stage, err
}

// recordConfig is the workers' configuration: state under tmp, the scripted
// model at modelURL, notifications to hookURL.
func recordConfig(tmp, modelURL, hookURL string) activities.Config {
	cfg := activities.DefaultConfig()
	cfg.WorkspaceRoot = filepath.Join(tmp, "workspaces")
	cfg.SessionDir = filepath.Join(tmp, "sessions")
	cfg.Agent.BaseURL, cfg.Agent.Model, cfg.Agent.APIKey = modelURL, primaryModel, "sk-record-only"
	cfg.Agent.FallbackModels = []string{fallbackModel}
	// Short waits keep recording quick: a Retry-After over 1 s defers the
	// round, and transient retries back off from 10 ms.
	cfg.Agent.MaxRetryAfter = time.Second
	cfg.Agent.RetryBaseDelay, cfg.Agent.RetryMaxDelay = 10*time.Millisecond, 50*time.Millisecond
	cfg.Limits.MaxRounds = 8
	cfg.Limits.MaxObjectiveChars = 262144 // the ceiling: objective-too-large meets the byte bound first
	cfg.Limits.RoundsPerRun = 3           // the continue-as-new scenario crosses a run boundary
	cfg.NotifyURL = hookURL
	// cancelled too: an operator-cancelled run's end event is recorded.
	cfg.NotifyEvents = append(slices.Clone(cfg.NotifyEvents), workflows.OutcomeCancelled)
	return cfg
}

// startWorkers starts every worker the scenarios need on c and returns a
// recorder that can start the ones a scenario starts itself; stop stops
// those started so far, also on error.
func startWorkers(ctx context.Context, c client.Client, cfg activities.Config) (recorder, func(), error) {
	var stops []func()
	stop := func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
	acts, err := activities.New(cfg)
	if err != nil {
		return recorder{}, stop, fmt.Errorf("activities: %w", err)
	}
	acts.UseClient(c) // a campaign's CheckTaskLoops reads its loops through it
	w := worker.New(c, taskQueue, worker.Options{
		MaxHeartbeatThrottleInterval: workerapp.HeartbeatThrottle, DefaultHeartbeatThrottleInterval: workerapp.HeartbeatThrottle,
	})
	workerapp.Register(w, acts, config.BehaviorPinned)
	if err := w.Start(); err != nil {
		return recorder{}, stop, fmt.Errorf("start the worker: %w", err)
	}
	stops = append(stops, w.Stop)
	standIn := worker.New(c, invalidReportQueue, worker.Options{})
	standIn.RegisterWorkflowWithOptions(workflows.Ralph, workflow.RegisterOptions{Name: workflows.WorkflowName})
	standIn.RegisterActivityWithOptions(acts.ResolveLimits, activity.RegisterOptions{Name: activities.ResolveLimitsName})
	standIn.RegisterActivityWithOptions(invalidRound, activity.RegisterOptions{Name: activities.RunRoundName})
	if err := standIn.Start(); err != nil {
		return recorder{}, stop, fmt.Errorf("start the invalid-report worker: %w", err)
	}
	stops = append(stops, standIn.Stop)

	// The versioned workers run what a versioned Ralph worker runs
	// (workerapp.Register with the behavior); the pinned one's limits carry
	// upgradeOnTargetChange, as RALPH_VERSIONING_BEHAVIOR=pinned sets it.
	// One round per workflow run: the upgrade scenario continues as new
	// after its round 1, with build B current by then (Temporal 1.29.1 sets
	// no target-version-changed flag, so rounds per run is what moves it).
	pinnedCfg := cfg
	pinnedCfg.Limits.UpgradeOnTargetChange = true
	pinnedCfg.Limits.RoundsPerRun = 1
	pinnedActs, err := activities.New(pinnedCfg)
	if err != nil {
		return recorder{}, stop, fmt.Errorf("activities: %w", err)
	}
	for _, v := range []struct {
		queue    string
		version  worker.WorkerDeploymentVersion
		acts     *activities.Activities
		behavior string
	}{{pinnedQueue, pinnedA, pinnedActs, config.BehaviorPinned}, {autoUpgradeQueue, autoUpgrade, acts, config.BehaviorAutoUpgrade}} {
		s, err := startVersioned(ctx, c, v.queue, v.version, v.acts, v.behavior)
		if err != nil {
			return recorder{}, stop, err
		}
		stops = append(stops, s)
	}
	r := recorder{c: c, root: cfg.WorkspaceRoot,
		upgrade: func(ctx context.Context) (func(), error) {
			return startVersioned(ctx, c, pinnedQueue, pinnedB, pinnedActs, config.BehaviorPinned)
		},
		rewindWorker: func() (func(), error) {
			w := worker.New(c, rewindQueue, worker.Options{
				MaxHeartbeatThrottleInterval: workerapp.HeartbeatThrottle, DefaultHeartbeatThrottleInterval: workerapp.HeartbeatThrottle,
			})
			workerapp.Register(w, acts, config.BehaviorPinned)
			if err := w.Start(); err != nil {
				return nil, fmt.Errorf("start the rewind worker: %w", err)
			}
			return w.Stop, nil
		}}
	return r, stop, nil
}

// runAll records every scenario of wanted; slow scenarios run alongside the
// others instead of after them.
func (r recorder) runAll(ctx context.Context, wanted []scenario) error {
	slow := make(chan error, len(wanted))
	pending := 0
	for _, sc := range wanted {
		if sc.slow {
			pending++
			go func() { slow <- r.runScenario(ctx, sc) }()
		}
	}
	for _, sc := range wanted {
		if !sc.slow {
			if err := r.runScenario(ctx, sc); err != nil {
				return err
			}
		}
	}
	for ; pending > 0; pending-- {
		if err := <-slow; err != nil {
			return err
		}
	}
	return nil
}

// writeManifest lists every history of dir with the SHA-256 of its JSON,
// in the format of `sha256sum`; a gzipped history is listed under its
// .json name with the hash of the JSON it holds.
func writeManifest(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.json*"))
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, f := range files {
		data, err := historyfile.Read(f)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), historyfile.Name(f))
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// startVersioned starts a worker of version v on queue and makes v the
// deployment's current version; stop stops the worker.
func startVersioned(ctx context.Context, c client.Client, queue string, v worker.WorkerDeploymentVersion,
	acts *activities.Activities, behavior string) (stop func(), err error) {
	w := worker.New(c, queue, worker.Options{
		MaxHeartbeatThrottleInterval: workerapp.HeartbeatThrottle, DefaultHeartbeatThrottleInterval: workerapp.HeartbeatThrottle,
		DeploymentOptions: worker.DeploymentOptions{UseVersioning: true, Version: v},
	})
	workerapp.Register(w, acts, behavior)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the worker of %s.%s: %w", v.DeploymentName, v.BuildID, err)
	}
	// The server knows a version only after its first poll.
	h := c.WorkerDeploymentClient().GetHandle(v.DeploymentName)
	err = wait.For(ctx, time.Minute, 250*time.Millisecond, func(ctx context.Context) error {
		_, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: v.BuildID, IgnoreMissingTaskQueues: true})
		return err
	})
	if err != nil {
		w.Stop()
		return nil, fmt.Errorf("make %s.%s current: %w", v.DeploymentName, v.BuildID, err)
	}
	return w.Stop, nil
}

// recorder records scenarios on the dev server's client c; root is the
// workers' workspace root, out the staging directory.
type recorder struct {
	c          client.Client
	root, out  string
	starterEnv config.MapEnv // how the starter reaches the dev server
	// upgrade starts build B of the pinned deployment and makes it current.
	upgrade func(context.Context) (stop func(), err error)
	// rewindWorker starts a worker on rewindQueue.
	rewindWorker func() (stop func(), err error)
}

func (r recorder) runScenario(ctx context.Context, sc scenario) error {
	if err := r.recordScenario(ctx, sc); err != nil {
		return fmt.Errorf("scenario %s: %w", sc.name, err)
	}
	return nil
}

func (r recorder) recordScenario(ctx context.Context, sc scenario) error {
	id := "history-" + sc.name
	began := time.Now()
	queue := taskQueue
	if sc.queue != "" {
		queue = sc.queue
	}
	run, err := r.c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.WorkflowName, json.RawMessage(sc.input))
	if err != nil {
		return err
	}
	stop, err := r.drive(ctx, sc, id)
	defer stop()
	if err != nil {
		return err
	}
	if sc.rewind {
		return r.recordRewind(ctx, sc, id, run.GetRunID())
	}
	if sc.rewindFast {
		return r.recordRewindFast(ctx, sc, id, run.GetRunID())
	}
	if sc.heldContinues {
		if err := r.holdUntilContinued(ctx, id, run.GetRunID()); err != nil {
			return err
		}
	}
	// Get follows continue-as-new and moves GetRunID along, so keep the first.
	firstRunID := run.GetRunID()
	runErr := run.Get(ctx, nil)
	fmt.Fprintf(os.Stderr, "%s: %v (%s)\n", sc.name, outcome(runErr), time.Since(began).Round(time.Second))
	return r.writeChain(ctx, sc, id, firstRunID)
}

// drive plays the operator's part of scenario sc on run id while it runs:
// updates, a stop while waiting, approvals, a cancel, an upgrade. stop
// stops what it started (the upgrade's worker) once the scenario is
// recorded.
func (r recorder) drive(ctx context.Context, sc scenario, id string) (stop func(), err error) {
	stop = func() {}
	ws := filepath.Join(r.root, workflows.DefaultWorkspace(id))
	if len(sc.updates) > 0 {
		if err := steer(ctx, r.c, ws, id, sc.updates); err != nil {
			return stop, err
		}
	}
	if sc.stopWhenWaiting {
		if err := stopWhileWaiting(ctx, r.c, id); err != nil {
			return stop, err
		}
	}
	if sc.approval {
		if err := steerApproval(ctx, r.c, id); err != nil {
			return stop, err
		}
	}
	if sc.cancel {
		if err := waitStarted(ctx, filepath.Join(ws, "started.txt")); err != nil {
			return stop, err
		}
		if err := r.c.CancelWorkflow(ctx, id, ""); err != nil {
			return stop, err
		}
	}
	if sc.upgrade {
		if err := waitStarted(ctx, filepath.Join(ws, "started.txt")); err != nil {
			return stop, err
		}
		if stop, err = r.upgrade(ctx); err != nil {
			return func() {}, err
		}
		return stop, release(ws)
	}
	return stop, nil
}

// stopWhileWaiting sends a stop once run id waits after a deferred round.
func stopWhileWaiting(ctx context.Context, c client.Client, id string) error {
	if err := waitPhase(ctx, c, id, workflows.PhaseWaiting); err != nil {
		return err
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: workflows.UpdateStop,
		Args: []any{workflows.StopRequest{Reason: "stopped while waiting"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("stop while waiting: %w", err)
	}
	return nil
}

// writeChain writes the histories of the first run of the chain, then of
// every run continue-as-new started: each run's last event names the next.
func (r recorder) writeChain(ctx context.Context, sc scenario, id, firstRunID string) error {
	var histories []*historypb.History
	for runID := firstRunID; runID != ""; {
		hist, err := readHistory(ctx, r.c, id, runID)
		if err != nil {
			return err
		}
		histories = append(histories, hist)
		runID = ""
		if evs := hist.GetEvents(); len(evs) > 0 {
			runID = evs[len(evs)-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
	if sc.continues && len(histories) < 2 {
		return errors.New("the run did not continue as new")
	}
	for i, hist := range histories {
		name := sc.name
		if len(histories) > 1 {
			name = fmt.Sprintf("%s-run%d", sc.name, i+1)
		}
		if err := writeHistory(hist, filepath.Join(r.out, name+".json")); err != nil {
			return err
		}
	}
	return nil
}

// recordRewind rewinds the run to round 1 once round 2 started its command,
// with the starter's own rewind, and records the original run (ended by the
// reset) and the reset run.
func (r recorder) recordRewind(ctx context.Context, sc scenario, id, originalRunID string) error {
	if err := waitStarted(ctx, filepath.Join(r.root, workflows.DefaultWorkspace(id), "started.txt")); err != nil {
		return err
	}
	var stdout, stderr strings.Builder
	starter := starterapp.App{Env: r.starterEnv, Stdout: &stdout, Stderr: &stderr}
	if code := starter.Main([]string{"rewind", "--workflow-id", id, "--round", "1", "--keep-workspace"}); code != starterapp.ExitComplete {
		return fmt.Errorf("starter rewind: exit %d\n%s", code, stderr.String())
	}
	resetRunID := strings.TrimSpace(stdout.String())
	runErr := r.c.GetWorkflow(ctx, id, resetRunID).Get(ctx, nil)
	fmt.Fprintf(os.Stderr, "%s: %v\n", sc.name, outcome(runErr))
	for name, runID := range map[string]string{sc.name + "-original": originalRunID, sc.name: resetRunID} {
		hist, err := readHistory(ctx, r.c, id, runID)
		if err != nil {
			return err
		}
		if err := writeHistory(hist, filepath.Join(r.out, name+".json")); err != nil {
			return err
		}
	}
	return nil
}

// release lets every round of a waitForRelease script end.
func release(ws string) error {
	for r := 1; r <= 8; r++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("release-%d", r)), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func steer(ctx context.Context, c client.Client, ws, id string, updates []update) error {
	if err := steerOnly(ctx, c, ws, id, updates); err != nil {
		return err
	}
	return release(ws)
}

// steerOnly sends updates once a round started its command (a pause
// releases round 1 and waits for the paused phase); it releases no more.
func steerOnly(ctx context.Context, c client.Client, ws, id string, updates []update) error {
	started := filepath.Join(ws, "started.txt")
	if err := waitStarted(ctx, started); err != nil {
		return err
	}
	for _, u := range updates {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: u.name, Args: u.args,
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			return fmt.Errorf("update %s: %w", u.name, err)
		}
		if u.name == workflows.UpdatePause {
			if err := os.WriteFile(filepath.Join(ws, "release-1"), nil, 0o644); err != nil {
				return err
			}
			if err := waitPhase(ctx, c, id, workflows.PhasePaused); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitStarted waits until the round's command has written started.
func waitStarted(ctx context.Context, started string) error {
	err := wait.For(ctx, time.Minute, 100*time.Millisecond, func(context.Context) error {
		_, err := os.Stat(started)
		return err
	})
	if err != nil {
		return fmt.Errorf("the round never started its command: %w", err)
	}
	return nil
}

func waitPhase(ctx context.Context, c client.Client, id, phase string) error {
	err := wait.For(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
		v, err := c.QueryWorkflow(ctx, id, "", workflows.StatusQueryName)
		var st workflows.Status
		if err == nil {
			err = v.Get(&st)
		}
		if err == nil && st.Phase != phase {
			err = fmt.Errorf("phase %s", st.Phase)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("run %s never reached phase %s: %w", id, phase, err)
	}
	return nil
}

func outcome(err error) string {
	if err == nil {
		return "completed"
	}
	return err.Error()
}

func readHistory(ctx context.Context, c client.Client, id, runID string) (*historypb.History, error) {
	hist := &historypb.History{}
	iter := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			return nil, fmt.Errorf("read history: %w", err)
		}
		hist.Events = append(hist.Events, ev)
	}
	return hist, nil
}

func writeHistory(hist *historypb.History, path string) error {
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	return historyfile.Write(path, append(data, '\n'))
}

// recordRewindFast rewinds the run to round 1 once round 2 started its
// command, as `starter rewind` does (reset to the workflow task after round
// 1's activity, then the rewound signal), but with the run's only worker
// stopped in between: the reset run's first workflow task then finds the
// signal in history (the fast path of awaitRewound, no timer). The signal
// counts 1000 tokens more than the status shows, standing in for the
// heartbeats of the abandoned round.
func (r recorder) recordRewindFast(ctx context.Context, sc scenario, id, originalRunID string) error {
	stop, err := r.rewindWorker()
	if err != nil {
		return err
	}
	if err := waitStarted(ctx, filepath.Join(r.root, workflows.DefaultWorkspace(id), "started.txt")); err != nil {
		stop()
		return err
	}
	v, err := r.c.QueryWorkflow(ctx, id, originalRunID, workflows.StatusQueryName)
	var st workflows.Status
	if err == nil {
		err = v.Get(&st)
	}
	if err != nil {
		stop()
		return fmt.Errorf("status: %w", err)
	}
	stop()
	point, err := afterRound1(ctx, r.c, id, originalRunID)
	if err != nil {
		return err
	}
	resp, err := r.c.ResetWorkflowExecution(ctx, &workflowservice.ResetWorkflowExecutionRequest{
		Namespace: "default", WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: originalRunID},
		Reason: "recorded fast rewind", WorkflowTaskFinishEventId: point, RequestId: uuid.NewString(),
		//lint:ignore SA1019 as starter rewind does
		ResetReapplyType: enumspb.RESET_REAPPLY_TYPE_NONE,
	})
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	spent := st.Usage
	spent.PromptTokens += 1000
	if err := r.c.SignalWorkflow(ctx, id, resp.GetRunId(), workflows.SignalRewound, workflows.RewoundSignal{Round: 1, Usage: spent}); err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	if stop, err = r.rewindWorker(); err != nil {
		return err
	}
	defer stop()
	runErr := r.c.GetWorkflow(ctx, id, resp.GetRunId()).Get(ctx, nil)
	fmt.Fprintf(os.Stderr, "%s: %v\n", sc.name, outcome(runErr))
	for name, runID := range map[string]string{sc.name + "-original": originalRunID, sc.name: resp.GetRunId()} {
		hist, err := readHistory(ctx, r.c, id, runID)
		if err != nil {
			return err
		}
		if err := writeHistory(hist, filepath.Join(r.out, name+".json")); err != nil {
			return err
		}
	}
	return nil
}

// afterRound1 is the event id of the workflow task completed after round
// 1's activity completed: where `starter rewind --round 1` resets.
func afterRound1(ctx context.Context, c client.Client, id, runID string) (int64, error) {
	hist, err := readHistory(ctx, c, id, runID)
	if err != nil {
		return 0, err
	}
	done := false
	for _, ev := range hist.GetEvents() {
		switch {
		case ev.GetActivityTaskCompletedEventAttributes() != nil:
			done = true
		case done && ev.GetWorkflowTaskCompletedEventAttributes() != nil:
			return ev.GetEventId(), nil
		}
	}
	return 0, errors.New("round 1's activity has not completed")
}

// holdUntilContinued: once the run is paused after round 1, signals it
// rewound (as if rewound during the pause) and sends describe updates until
// the server's suggestion moves it to a next run, which it resumes.
func (r recorder) holdUntilContinued(ctx context.Context, id, runID string) error {
	ws := filepath.Join(r.root, workflows.DefaultWorkspace(id))
	if err := steerOnly(ctx, r.c, ws, id, []update{{name: workflows.UpdatePause}}); err != nil {
		return err
	}
	lost := usage.Usage{ModelCalls: 1, PromptTokens: 700, CompletionTokens: 70}
	v, err := r.c.QueryWorkflow(ctx, id, runID, workflows.StatusQueryName)
	var st workflows.Status
	if err == nil {
		err = v.Get(&st)
	}
	if err == nil {
		err = r.c.SignalWorkflow(ctx, id, runID, workflows.SignalRewound, workflows.RewoundSignal{Round: 1, Usage: st.Usage.Add(lost)})
	}
	if err != nil {
		return fmt.Errorf("signal the paused run: %w", err)
	}
	for range 40 {
		d, err := r.c.DescribeWorkflow(ctx, id, runID)
		if err != nil {
			return err
		}
		if d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			return steer(ctx, r.c, ws, id, []update{{name: workflows.UpdateResume}})
		}
		// The describe that moves the run may fail as the run closes: the
		// next look at its status tells.
		h, err := r.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, RunID: runID, UpdateName: workflows.UpdateDescribe,
			WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: describe: %v\n", id, err)
		}
	}
	return errors.New("the paused run never continued as new")
}

// steerApproval guides and rejects the run's first approval wait and
// approves its second.
func steerApproval(ctx context.Context, c client.Client, id string) error {
	steps := []struct {
		round   int
		updates []update
	}{
		{1, []update{{workflows.UpdateGuide, []any{workflows.GuideRequest{Text: "recorded guidance"}}},
			{workflows.UpdateReject, []any{workflows.ReasonRequest{Reason: "recorded rejection"}}}}},
		{2, []update{{workflows.UpdateApprove, []any{workflows.ApproveRequest{}}}}},
	}
	for _, st := range steps {
		err := wait.For(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
			v, err := c.QueryWorkflow(ctx, id, "", workflows.StatusQueryName)
			var s workflows.Status
			if err == nil {
				err = v.Get(&s)
			}
			if err == nil && (s.Phase != workflows.PhaseAwaitingApproval || s.Round != st.round) {
				err = fmt.Errorf("phase %s at round %d", s.Phase, s.Round)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("run %s never awaited approval after round %d: %w", id, st.round, err)
		}
		for _, u := range st.updates {
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: u.name, Args: u.args,
				WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				err = h.Get(ctx, nil)
			}
			if err != nil {
				return fmt.Errorf("%s update: %w", u.name, err)
			}
		}
	}
	return nil
}
