package activities

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
)

func TestWorkspaceLocks(t *testing.T) {
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.Agent.Model = "m"
	cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(base, "w"), filepath.Join(base, "s")
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tryLock := func(ws string) (*workspaceLock, bool) {
		t.Helper()
		waited := false
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		l, err := a.lockWorkspace(short, ws, func() { waited = true })
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) || !waited {
				t.Fatalf("lock %q: %v (waited %v)", ws, err, waited)
			}
			return nil, false
		}
		return l, true
	}

	ab, ok := tryLock("a/b")
	if !ok {
		t.Fatal("a/b: not locked")
	}
	ac, ok := tryLock("a/c")
	if !ok {
		t.Fatal("a/c must not conflict with a/b")
	}
	if _, ok := tryLock("a/b"); ok {
		t.Fatal("a second round on a/b got the lock")
	}
	if _, ok := tryLock("a"); ok {
		t.Fatal("a round on a got the lock while a/b and a/c run")
	}
	ab.release()
	ac.release()
	whole, ok := tryLock("a")
	if !ok {
		t.Fatal("a: not locked after release")
	}
	if _, ok := tryLock("a/b/c"); ok {
		t.Fatal("a/b/c got the lock while a runs")
	}
	whole.release()
}

// A round whose workspace is busy waits (heartbeating) and still honours a cancel.
func TestRunRoundWaitsForBusyWorkspace(t *testing.T) {
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.Agent.Model, cfg.Agent.BaseURL = "m", "http://127.0.0.1:1/v1" // never reached
	cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(base, "w"), filepath.Join(base, "s")
	cfg.HeartbeatInterval = 20 * time.Millisecond
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	held, err := a.lockWorkspace(context.Background(), "repo", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()

	// The test environment passes only the context's deadline on (as the
	// round's start-to-close timeout), not a cancel: 3 s leaves a loaded
	// machine room for the round to reach the lock and heartbeat there.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })
	a.Register(env)
	in := RoundInput{Objective: "x", Round: 1, MaxRounds: 1, Workspace: "repo", MaxHandoffChars: 100}
	if _, err := env.ExecuteActivity(RunRoundName, in); err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("error = %v, want the context's error", err)
	}
	if beats.Load() == 0 {
		t.Error("no heartbeat while waiting for the lock")
	}
	if files, _ := filepath.Glob(filepath.Join(a.TranscriptDir("repo"), "*")); len(files) != 0 {
		t.Errorf("a session started while the workspace was busy: %v", files)
	}
}

// A round's candidates queue for the workspace one after another: each must
// get it as soon as the one before releases it, not a poll interval later
// (that cost a 3-candidate round about half a second).
func TestWorkspaceLockWakesTheNextWaiterAtRelease(t *testing.T) {
	base := t.TempDir()
	cfg := DefaultConfig()
	cfg.Agent.Model = "m"
	cfg.WorkspaceRoot, cfg.SessionDir = filepath.Join(base, "w"), filepath.Join(base, "s")
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Polling alone would leave both waiters waiting an hour.
	a.lockPoll = time.Hour
	held, err := a.lockWorkspace(context.Background(), "ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 2
	waiting, got := make(chan struct{}, waiters), make(chan time.Time, waiters)
	for range waiters {
		go func() {
			l, err := a.lockWorkspace(context.Background(), "ws", func() { waiting <- struct{}{} })
			if err != nil {
				t.Error(err)
				got <- time.Time{}
				return
			}
			got <- time.Now()
			time.Sleep(10 * time.Millisecond) // the candidate's own step under the lock
			l.release()
		}()
	}
	for range waiters {
		<-waiting
	}
	held.release()
	for range waiters {
		select {
		case at := <-got:
			if at.IsZero() {
				t.Fatal("a waiter failed to lock")
			}
		case <-time.After(time.Minute):
			t.Fatal("a waiter still waits a minute after the release: the release did not wake it")
		}
	}
}
