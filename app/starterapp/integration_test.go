package starterapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/devenv/temporalserver"
	"github.com/ralph-temporal/ralph/internal/wait"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// scriptedRounds stands in for the real activities: the objective names the
// behaviour, so the starter can be driven through every outcome against a
// real dev server and the real workflow.
type scriptedRounds struct {
	cancelled atomic.Int32
	started   chan int
}

func (s *scriptedRounds) ResolveLimits(context.Context) (activities.Limits, error) {
	l := activities.DefaultLimits()
	l.RoundsPerRun = 2 // exercise continue-as-new
	l.MaxObjectiveChars = 100
	l.HeartbeatTimeoutSeconds = 2
	return l, nil
}

func (s *scriptedRounds) RunRound(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
	next := func(status, summary string) (activities.RoundOutput, error) {
		r := report.Report{Status: status, Summary: summary, Evidence: []string{}, NextSteps: []string{}}
		switch status {
		case report.StatusContinue:
			r.NextSteps = []string{"keep going"}
		case report.StatusComplete:
			r.Evidence = []string{"tests pass"}
		case report.StatusBlocked:
			r.Blocker = "needs a human"
		}
		return activities.RoundOutput{Report: r, Usage: usage.Usage{ModelCalls: 1, ToolCalls: 2}, SessionID: fmt.Sprintf("s%d", in.Round)}, nil
	}
	switch in.Objective {
	case "complete after 3":
		if in.Round < 3 {
			return next(report.StatusContinue, fmt.Sprintf("round %d made progress", in.Round))
		}
		return next(report.StatusComplete, "all done")
	case "forever":
		return next(report.StatusContinue, "more to do")
	case "block":
		return next(report.StatusBlocked, "stuck")
	case "fail in round 2":
		if in.Round < 2 {
			return next(report.StatusContinue, "first round fine")
		}
		return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError("model answered 401", activities.ErrTypeChildFailed, nil)
	case "escape complete": // model text that is a terminal command (printable_test.go)
		return next(report.StatusComplete, hostile)
	case "escape fail":
		if in.Round < 2 {
			return next(report.StatusContinue, hostile)
		}
		return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError("verify said "+hostile, activities.ErrTypeChildFailed, nil)
	case "hang":
		select {
		case s.started <- in.Round:
		default:
		}
		for {
			activity.RecordHeartbeat(ctx, activities.HeartbeatDetails{Round: in.Round})
			if err := wait.Sleep(ctx, 200*time.Millisecond); err != nil {
				s.cancelled.Add(1)
				return activities.RoundOutput{}, err
			}
		}
	}
	return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError("unknown script "+in.Objective, activities.ErrTypeChildFailed, nil)
}

type stack struct {
	srv    *temporalserver.Server
	rounds *scriptedRounds
	env    config.MapEnv
}

func startStack(t *testing.T) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := temporalserver.StartDev(ctx, temporalserver.DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c, err := srv.Dial(ctx, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	rounds := &scriptedRounds{started: make(chan int, 1)}
	w := worker.New(c, "ralph", worker.Options{MaxHeartbeatThrottleInterval: time.Second, DefaultHeartbeatThrottleInterval: time.Second})
	w.RegisterWorkflowWithOptions(workflows.Ralph, workflow.RegisterOptions{Name: workflows.WorkflowName})
	w.RegisterWorkflowWithOptions(standInCampaign, workflow.RegisterOptions{Name: campaign.CampaignWorkflowName})
	w.RegisterActivityWithOptions(rounds.ResolveLimits, activity.RegisterOptions{Name: activities.ResolveLimitsName})
	w.RegisterActivityWithOptions(rounds.RunRound, activity.RegisterOptions{Name: activities.RunRoundName})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	// The starter refuses a start while no worker polls: wait until this
	// one does, as a worker process would be waited for.
	if err := temporalserver.WaitPolling(ctx, c, "ralph", os.Getpid(), nil); err != nil {
		t.Fatal(err)
	}
	return &stack{srv: srv, rounds: rounds, env: config.MapEnv{
		"TEMPORAL_ADDRESS": srv.Address, "TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml",
	}}
}

type invocation struct {
	code           int
	stdout, stderr string
}

func (s *stack) starter(t *testing.T, signals chan os.Signal, args ...string) invocation {
	t.Helper()
	var stdout, stderr bytes.Buffer
	app := &App{Env: s.env, Stdout: &stdout, Stderr: &stderr, Signals: signals, PollInterval: 100 * time.Millisecond}
	code := app.Main(args)
	return invocation{code, stdout.String(), stderr.String()}
}

func (inv invocation) expect(t *testing.T, code int, stdout, stderr []string) {
	t.Helper()
	if inv.code != code {
		t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", inv.code, code, inv.stdout, inv.stderr)
	}
	for _, w := range stdout {
		if !strings.Contains(inv.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, inv.stdout)
		}
	}
	for _, w := range stderr {
		if !strings.Contains(inv.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, inv.stderr)
		}
	}
}

func TestStarterAgainstDevServer(t *testing.T) {
	s := startStack(t)

	t.Run("complete", func(t *testing.T) {
		inv := s.starter(t, nil, "run", "--workspace", "c", "--objective", "complete after 3")
		inv.expect(t, ExitComplete,
			[]string{"A worker reported completion after 3 rounds.", `"evidence": [`},
			[]string{"started workflow ralph-c", "round 1/256 continue: round 1 made progress", "round 3/256 complete: all done", "usage: 3 model calls"})
	})
	t.Run("budget-limited", func(t *testing.T) {
		s.starter(t, nil, "run", "--workspace", "f", "--objective", "forever", "--max-rounds", "3").
			expect(t, ExitBudgetLimited, []string{"The 3-round limit was reached with work remaining."}, []string{"round 3/3 continue"})
	})
	t.Run("blocked", func(t *testing.T) {
		s.starter(t, nil, "run", "--workspace", "b", "--objective", "block").
			expect(t, ExitBlocked, []string{"A worker reported a blocker after 1 round."}, nil)
	})
	t.Run("round failed", func(t *testing.T) {
		s.starter(t, nil, "run", "--workspace", "rf", "--objective", "fail in round 2").
			expect(t, ExitFailed, nil, []string{"RoundFailed", "Failed round: 2", "Last accepted handoff:", "first round fine"})
	})
	t.Run("invalid input", func(t *testing.T) {
		s.starter(t, nil, "run", "--workspace", "ii", "--objective", strings.Repeat("x", 101)).
			expect(t, ExitFailed, nil, []string{"InvalidInput", "objective"})
	})
	t.Run("result text bounded", func(t *testing.T) {
		s.env["RALPH_MAX_RESULT_CHARS"] = "40"
		defer delete(s.env, "RALPH_MAX_RESULT_CHARS")
		inv := s.starter(t, nil, "result", "ralph-c")
		inv.expect(t, ExitComplete, []string{report.TruncationMarker}, nil)
		if n := len([]rune(strings.TrimSuffix(inv.stdout, "\n"))); n != 40 {
			t.Errorf("result text is %d code points, want 40", n)
		}
	})
	t.Run("json result", func(t *testing.T) {
		inv := s.starter(t, nil, "result", "--json", "--workflow-id", "ralph-b")
		var res workflows.Result
		if err := json.Unmarshal([]byte(inv.stdout), &res); err != nil || res.Status != "blocked" || inv.code != ExitBlocked {
			t.Errorf("json result: %v %+v code %d", err, res, inv.code)
		}
	})
	t.Run("no worker", func(t *testing.T) {
		s.starter(t, nil, "start", "--workspace", "nw", "--objective", "forever", "--task-queue", "nobody-polls").
			expect(t, ExitFailed, nil, []string{`no worker is polling task queue "nobody-polls"`})
	})
	t.Run("unknown workflow", func(t *testing.T) {
		s.starter(t, nil, "result", "no-such-run").expect(t, ExitFailed, nil, []string{`no workflow with id "no-such-run"`})
		s.starter(t, nil, "cancel", "no-such-run").expect(t, ExitFailed, nil, []string{"nothing to cancel"})
		s.starter(t, nil, "cancel", "ralph-b").expect(t, ExitFailed, nil, []string{"is not running (it closed as completed)"})
	})
}

func TestStarterBackgroundAndCancel(t *testing.T) {
	s := startStack(t)

	s.starter(t, nil, "start", "--workspace", "h", "--objective", "hang").expect(t, ExitComplete, []string{"ralph-h\n"}, nil)
	select {
	case <-s.rounds.started:
	case <-time.After(90 * time.Second): // generous: a loaded 2-core CI machine
		t.Fatal("the round never started")
	}
	s.starter(t, nil, "start", "--workspace", "h", "--objective", "hang").
		expect(t, ExitFailed, nil, []string{`a run with workflow id "ralph-h" is already open`})

	inv := s.starter(t, nil, "status", "--workspace", "h")
	inv.expect(t, ExitComplete, nil, nil)
	var st workflows.Status
	if err := json.Unmarshal([]byte(inv.stdout), &st); err != nil {
		t.Fatalf("status is not JSON: %v\n%s", err, inv.stdout)
	}
	if st.Round != 1 || st.Phase != workflows.PhaseRunning || st.MaxRounds != 256 {
		t.Errorf("status = %+v", st)
	}

	var wg sync.WaitGroup
	var waited invocation
	wg.Add(1)
	go func() {
		defer wg.Done()
		waited = s.starter(t, nil, "result", "ralph-h")
	}()
	s.starter(t, nil, "cancel", "ralph-h").expect(t, ExitComplete, nil, []string{"cancelled and closed"})
	if s.rounds.cancelled.Load() != 1 {
		t.Errorf("the running round saw %d cancellations, want 1 before the workflow closed", s.rounds.cancelled.Load())
	}
	wg.Wait()
	waited.expect(t, ExitCancelled, nil, []string{"was cancelled"})

	// A closed id may be started again.
	s.starter(t, nil, "start", "--workspace", "h", "--objective", "block").expect(t, ExitComplete, []string{"ralph-h"}, nil)
	s.starter(t, nil, "result", "ralph-h").expect(t, ExitBlocked, nil, nil)
}

func TestStarterRunInterrupted(t *testing.T) {
	s := startStack(t)
	signals := make(chan os.Signal, 1)
	done := make(chan invocation, 1)
	go func() { done <- s.starter(t, signals, "run", "--workspace", "i", "--objective", "hang") }()
	select {
	case <-s.rounds.started:
	case <-time.After(90 * time.Second): // generous: a loaded 2-core CI machine
		t.Fatal("the round never started")
	}
	signals <- syscall.SIGINT
	select {
	case inv := <-done:
		inv.expect(t, ExitCancelled, nil, []string{"cancelling workflow ralph-i", "was cancelled"})
		if s.rounds.cancelled.Load() != 1 {
			t.Errorf("the round was not cancelled before the starter returned")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after SIGINT")
	}
}
