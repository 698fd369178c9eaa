// Package wait is the one way this project waits for something: a check
// asked at an interval until it passes, the context ends, or the check says
// that waiting longer cannot help. Production code and the dev tree both use
// it, so it lives among the leaf libraries.
package wait

import (
	"context"
	"errors"
	"time"
)

// Until asks check at once and then every interval until it returns nil.
// It returns nil; the error a check wrapped with Final (unwrapped); or, when
// ctx ends first, a *TimedOut holding ctx's error and the check's last one.
func Until(ctx context.Context, interval time.Duration, check func(context.Context) error) error {
	return UntilWoken(ctx, interval, nil, check)
}

// UntilWoken is Until that also asks check again as soon as the channel
// wake returned before the check is closed (wake nil: the interval alone).
// It suits what this process can announce (a lock it released) but
// another process changes silently: the interval still catches those.
func UntilWoken(ctx context.Context, interval time.Duration, wake func() <-chan struct{}, check func(context.Context) error) error {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		var woken <-chan struct{} // nil blocks forever
		if wake != nil {
			woken = wake()
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		var f *finalError
		if errors.As(err, &f) {
			return f.err
		}
		if ctx.Err() != nil {
			return &TimedOut{Ctx: ctx.Err(), Last: err}
		}
		t.Reset(interval)
		select {
		case <-ctx.Done():
			return &TimedOut{Ctx: ctx.Err(), Last: err}
		case <-t.C:
		case <-woken:
		}
	}
}

// For is Until with a deadline of within from now.
func For(ctx context.Context, within, interval time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return Until(ctx, interval, check)
}

// Final marks err as one that waiting longer cannot change (a process that
// exited, a refused request): Until returns it at once.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &finalError{err: err}
}

type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// TimedOut is Until's error when the context ended before the check passed.
// Its message is the check's last error, which says what was still missing;
// errors.Is finds the context's error (context.DeadlineExceeded or
// context.Canceled) as well as the last one.
type TimedOut struct {
	Ctx  error
	Last error
}

func (e *TimedOut) Error() string   { return e.Last.Error() }
func (e *TimedOut) Unwrap() []error { return []error{e.Ctx, e.Last} }

// Sleep waits for d or until ctx ends, and returns ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
