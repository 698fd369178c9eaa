package agent

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

var (
	boundsStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	timeBoundAt = boundsStart.Add(9 * time.Minute) // testBounds' time bound
)

// testBounds are the limits of a round of 10 calls, a context of 1000
// tokens, 2 reminders, a run token budget of 5000 and a time bound at
// 00:09 of a round ending at 00:10.
func testBounds() roundBounds {
	return roundBounds{
		maxCalls: 10, maxReminders: 2, contextTokens: 1000, tokenBudget: 5000, answerReserve: 100,
		handoffAt: timeBoundAt, handoffBound: BoundRoundTime, deadline: boundsStart.Add(10 * time.Minute),
	}
}

func TestNewRoundBounds(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.MaxModelCalls, cfg.MaxReminders, cfg.ContextTokens, cfg.MaxOutputTokens = 7, 3, 2000, 300
	req := Request{TokenBudget: 9000, Deadline: boundsStart.Add(time.Hour), RunDeadline: boundsStart.Add(2 * time.Hour)}
	want := roundBounds{
		maxCalls: 7, maxReminders: 3, contextTokens: 2000, tokenBudget: 9000, answerReserve: 300,
		handoffAt: boundsStart.Add(54 * time.Minute), handoffBound: BoundRoundTime, deadline: req.Deadline,
	}
	if got := newRoundBounds(cfg, req, boundsStart); !reflect.DeepEqual(got, want) {
		t.Errorf("newRoundBounds = %+v\nwant %+v", got, want)
	}
	cfg.MaxOutputTokens = 0 // the reserve is then the largest valid report
	if got, want := answerReserve(cfg, Request{MaxHandoffChars: 401}), 101; got != want {
		t.Errorf("answer reserve without an output limit = %d, want %d", got, want)
	}
}

func TestTimeBound(t *testing.T) {
	t.Parallel()
	hour, twoHours := boundsStart.Add(time.Hour), boundsStart.Add(2*time.Hour)
	for _, tc := range []struct {
		name       string
		round, run time.Time
		wantAt     time.Time
		wantBound  string
	}{
		{"no deadline: no time bound", time.Time{}, time.Time{}, time.Time{}, ""},
		{"the round's deadline", hour, time.Time{}, boundsStart.Add(54 * time.Minute), BoundRoundTime},
		{"the run's deadline", time.Time{}, hour, boundsStart.Add(54 * time.Minute), BoundRunTime},
		{"the round ends first", hour, twoHours, boundsStart.Add(54 * time.Minute), BoundRoundTime},
		{"the run ends first", twoHours, hour, boundsStart.Add(54 * time.Minute), BoundRunTime},
	} {
		at, bound := timeBound(boundsStart, tc.round, tc.run)
		if !at.Equal(tc.wantAt) || bound != tc.wantBound {
			t.Errorf("%s: time bound %s (%q), want %s (%q)", tc.name, at, bound, tc.wantAt, tc.wantBound)
		}
	}
}

func TestHandoffDue(t *testing.T) {
	t.Parallel()
	early := boundsStart.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		state func(*roundBounds)
		step  int
		now   time.Time
		spent int
		next  int // estimated size of the next full request
		want  string
	}{
		{"nothing reached", nil, 1, early, 0, 800, ""},
		{"already forced: never again", func(b *roundBounds) { b.forced = BoundContext }, 10, timeBoundAt, 5000, 999, ""},
		{"a pending bound goes first", func(b *roundBounds) { b.pending = BoundLoop }, 10, timeBoundAt, 0, 999, BoundLoop},
		{"the last model call", nil, 10, early, 0, 10, BoundModelCalls},
		{"the time bound", nil, 2, timeBoundAt, 0, 10, BoundRoundTime},
		{"the run's time bound", func(b *roundBounds) { b.handoffBound = BoundRunTime }, 2, timeBoundAt, 0, 10, BoundRunTime},
		{"no time bound", func(b *roundBounds) { b.handoffAt, b.handoffBound = time.Time{}, "" }, 2, timeBoundAt, 0, 10, ""},
		{"context at 80 %: still room", nil, 2, early, 0, 800, ""},
		{"context past 80 %", nil, 2, early, 0, 801, BoundContext},
		{"budget with the answer reserve: still room", nil, 2, early, 4100, 800, ""},
		{"budget with the answer reserve: passed", nil, 2, early, 4101, 800, BoundTokenBudget},
		{"no token budget", func(b *roundBounds) { b.tokenBudget = 0 }, 2, early, 1 << 20, 800, ""},
	} {
		b := testBounds()
		if tc.state != nil {
			tc.state(&b)
		}
		if got := b.handoffDue(tc.step, tc.now, tc.spent, func() int { return tc.next }); got != tc.want {
			t.Errorf("%s: due %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHandoffDueEstimatesOnlyWhenNeeded(t *testing.T) {
	t.Parallel()
	b := testBounds()
	b.handoffDue(10, boundsStart, 0, func() int {
		t.Error("the next request was estimated although the last model call is due anyway")
		return 0
	})
}

// Each step of a round's bounds, as the whole state after it.
func TestRoundBoundsTransitions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps func(*roundBounds)
		want  func(*roundBounds)
	}{
		{"force: only the finishing tool, the pending bound spent",
			func(b *roundBounds) { b.pend(BoundLoop); b.force(BoundLoop) },
			func(b *roundBounds) { b.forced, b.reportOnly = BoundLoop, true }},
		{"pend after the hand-off: nothing",
			func(b *roundBounds) { b.force(BoundContext); b.pend(BoundLoop) },
			func(b *roundBounds) { b.forced, b.reportOnly = BoundContext, true }},
		{"compact: forces the hand-off for its bound",
			func(b *roundBounds) { b.compact(BoundContextError) },
			func(b *roundBounds) { b.forced, b.reportOnly, b.compacted = BoundContextError, true, true }},
		{"compact after a forced hand-off keeps its bound",
			func(b *roundBounds) { b.force(BoundTokenBudget); b.compact(BoundTokenBudget) },
			func(b *roundBounds) { b.forced, b.reportOnly, b.compacted = BoundTokenBudget, true, true }},
		{"text answers within the reminders: the last offers only the finishing tool",
			func(b *roundBounds) { b.textAnswer(); b.textAnswer() },
			func(b *roundBounds) { b.textStreak, b.reportOnly = 2, true }},
		{"a tool call ends the streak",
			func(b *roundBounds) { b.textAnswer(); b.toolsCalled() },
			func(b *roundBounds) {}},
	} {
		got, want := testBounds(), testBounds()
		tc.steps(&got)
		tc.want(&want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tc.name, got, want)
		}
	}
}

func TestTextAnswersEndTheRoundPastTheReminders(t *testing.T) {
	t.Parallel()
	b := testBounds()
	var finals []bool
	for range b.maxReminders {
		final, err := b.textAnswer()
		if err != nil {
			t.Fatalf("text answer %d: %v", len(finals)+1, err)
		}
		finals = append(finals, final)
	}
	if want := []bool{false, true}; !reflect.DeepEqual(finals, want) {
		t.Errorf("final reminders = %v, want %v", finals, want)
	}
	_, err := b.textAnswer()
	want := "round ended without a valid report: the model answered with text 3 times in a row, the last time when only submit_report was offered"
	if !IsChildFailure(err) || err.Error() != want {
		t.Errorf("third text answer: %v, want the child failure %q", err, want)
	}
}

func TestCompactionAndTheContext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		state       func(*roundBounds)
		size, spent int
		want        bool
	}{
		{"fits", nil, 1000, 0, false},
		{"larger than the context", nil, 1001, 0, true},
		{"compacted already: never again", func(b *roundBounds) { b.compacted = true }, 5000, 0, false},
		{"over the budget without its hand-off: no", nil, 900, 4500, false},
		{"over the budget in its hand-off", func(b *roundBounds) { b.force(BoundTokenBudget) }, 900, 4500, true},
	} {
		b := testBounds()
		if tc.state != nil {
			tc.state(&b)
		}
		if got := b.needsCompaction(tc.size, tc.spent); got != tc.want {
			t.Errorf("%s: needs compaction = %v, want %v", tc.name, got, tc.want)
		}
	}
	b := testBounds()
	if err := b.fits(1000); err != nil {
		t.Errorf("a request of the context's size: %v", err)
	}
	want := "round ended without a valid report: the compacted hand-off request would need about 1001 tokens, more than the model's context of 1000"
	if err := b.fits(1001); !IsChildFailure(err) || err.Error() != want {
		t.Errorf("a request over the context: %v, want %q", err, want)
	}
}

func TestTooLong(t *testing.T) {
	t.Parallel()
	refusal := errors.New("too long")
	for _, tc := range []struct {
		name         string
		state        func(*roundBounds)
		wantAnnounce bool
		wantErr      string
	}{
		{"first refusal: a hand-off to record", nil, true, ""},
		{"first refusal in a forced hand-off", func(b *roundBounds) { b.force(BoundContext) }, false, ""},
		{"after the compaction: the end", func(b *roundBounds) { b.compact(BoundContextError) }, false,
			"round ended without a valid report: too long (again, after the compacted hand-off request)"},
	} {
		b := testBounds()
		if tc.state != nil {
			tc.state(&b)
		}
		announce, err := b.tooLong(refusal)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if announce != tc.wantAnnounce || gotErr != tc.wantErr {
			t.Errorf("%s: announce %v, error %q; want %v, %q", tc.name, announce, gotErr, tc.wantAnnounce, tc.wantErr)
		}
	}
}

func TestExhausted(t *testing.T) {
	t.Parallel()
	b := testBounds()
	for last, want := range map[string]string{
		"":             "round ended without a valid report: no valid report within the bound of 10 model calls",
		"summary: bad": "round ended without a valid report: no valid report within the bound of 10 model calls (last rejection: summary: bad)",
	} {
		if err := b.exhausted(last); !IsChildFailure(err) || err.Error() != want {
			t.Errorf("exhausted(%q) = %v, want %q", last, err, want)
		}
	}
}

func TestBoundsVerifyTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		state func(*roundBounds)
		now   time.Time
		want  time.Duration
	}{
		{"long before the time bound", nil, boundsStart, 5 * time.Minute},
		{"ends by the time bound", nil, boundsStart.Add(8 * time.Minute), time.Minute},
		{"after the time bound: half the round's rest", nil, timeBoundAt, 30 * time.Second},
		{"past the deadline: a millisecond", nil, boundsStart.Add(11 * time.Minute), time.Millisecond},
		{"no deadline", func(b *roundBounds) { *b = roundBounds{} }, boundsStart, 5 * time.Minute},
	} {
		b := testBounds()
		if tc.state != nil {
			tc.state(&b)
		}
		if got := b.verifyTimeout(5*time.Minute, tc.now); got != tc.want {
			t.Errorf("%s: verify timeout %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	pastDeadline, stop := context.WithDeadlineCause(live, boundsStart, errRoundDeadline)
	defer stop()
	other := errors.New("harness")
	for _, tc := range []struct {
		name      string
		ctx, sctx context.Context
		err       error
		want      string
	}{
		{"a report", cancelled, cancelled, nil, ""},
		{"the caller's cancel wins", cancelled, pastDeadline, other, context.Canceled.Error()},
		{"the round deadline: a child failure", live, pastDeadline, other, "round ended without a valid report: the round timeout was reached without a valid report"},
		{"anything else stays", live, live, other, "harness"},
	} {
		got := ""
		if err := settle(tc.ctx, tc.sctx, tc.err); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: settle = %q, want %q", tc.name, got, tc.want)
		}
	}
}
