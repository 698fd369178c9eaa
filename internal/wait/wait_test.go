package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestUntilPassesOnceTheCheckDoes(t *testing.T) {
	calls := 0
	err := Until(context.Background(), time.Millisecond, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls)
	}
}

func TestUntilStopsAtAFinalError(t *testing.T) {
	gone := errors.New("the process exited")
	calls := 0
	err := Until(context.Background(), time.Millisecond, func(context.Context) error {
		calls++
		return Final(gone)
	})
	if err != gone || calls != 1 {
		t.Fatalf("err %v after %d calls, want the final error itself after 1", err, calls)
	}
}

func TestUntilNamesTheLastErrorWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Until(ctx, time.Millisecond, func(context.Context) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return errors.New("port 7233 refused")
	})
	var to *TimedOut
	if !errors.As(err, &to) || !errors.Is(err, context.Canceled) || err.Error() != "port 7233 refused" {
		t.Fatalf("err = %v (%T)", err, err)
	}
	if calls != 2 {
		t.Fatalf("%d calls after the cancel, want 2", calls)
	}
}

func TestForHasADeadline(t *testing.T) {
	err := For(context.Background(), 20*time.Millisecond, time.Millisecond, func(context.Context) error { return errors.New("never") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

func TestUntilWokenAsksAgainAtTheWakeNotTheInterval(t *testing.T) {
	wake := make(chan struct{})
	calls := 0
	start := time.Now()
	go func() { time.Sleep(20 * time.Millisecond); close(wake) }()
	err := UntilWoken(context.Background(), time.Hour, func() <-chan struct{} { return wake }, func(context.Context) error {
		calls++
		if calls == 1 {
			return errors.New("busy")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("err %v after %d calls, want nil after 2", err, calls)
	}
	if took := time.Since(start); took > time.Minute {
		t.Fatalf("took %v: it waited for the interval, not the wake", took)
	}
}
