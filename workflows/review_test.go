package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// reviewer plays ReviewCompletion: verdicts[i] is the i-th review's verdict
// ("fail" fails it as a child failure).
type reviewer struct {
	mu       sync.Mutex
	verdicts []string
	inputs   []activities.ReviewInput
}

func (r *reviewer) review(_ context.Context, in activities.ReviewInput) (activities.ReviewOutput, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputs = append(r.inputs, in)
	v := r.verdicts[len(r.inputs)-1]
	spent := usage.Usage{ModelCalls: 1, ToolCalls: 1, PromptTokens: 50, CompletionTokens: 5}
	if v == "defer" {
		return activities.ReviewOutput{Usage: spent, SessionID: "review-deferred",
			Deferred: &activities.Deferred{Reason: activities.DeferRateLimited, RetryAfterSeconds: 120}}, nil
	}
	if v == "fail" {
		return activities.ReviewOutput{}, temporal.NewNonRetryableApplicationError("review: no valid verdict", activities.ErrTypeChildFailed, nil,
			activities.FailureDetails{SessionID: "review-x", Usage: spent})
	}
	rv := report.Review{Verdict: v, Summary: fmt.Sprintf("review %d", len(r.inputs)), Findings: []string{}, Model: "judge", SessionID: fmt.Sprintf("review-%d", len(r.inputs))}
	if v == report.VerdictRevise {
		rv.Findings = []string{"Unskip the test", "Handle negatives"}
	}
	return activities.ReviewOutput{Review: rv, Usage: spent, SessionID: rv.SessionID}, nil
}

func newReviewEnv(t *testing.T, limits activities.Limits, s *script, r *reviewer) *testsuite.TestWorkflowEnvironment {
	env := newEnv(t, limits, s)
	env.RegisterActivityWithOptions(r.review, activity.RegisterOptions{Name: activities.ReviewCompletionName})
	return env
}

func TestReviewApproves(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: completeReport(2)}, commits: map[int]string{1: "c1", 2: "c2"},
		verified: map[int]*report.Verification{2: {Command: "make test", ExitCode: 0}}}
	r := &reviewer{verdicts: []string{"approve"}}
	env := newReviewEnv(t, testLimits(), s, r)
	res, err := execute(t, env, `{"objective":"fix it","review":true,"verifyCommand":"make test","protectedPaths":["tests/**"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 || res.Review == nil || res.Review.Verdict != "approve" ||
		res.Review.Model != "judge" || res.Review.SessionID != "review-1" || res.Verification == nil {
		t.Fatalf("result %+v", res)
	}
	if want := (usage.Usage{ModelCalls: 5, ToolCalls: 7, PromptTokens: 250, CompletionTokens: 25}); res.Usage != want {
		t.Fatalf("usage %+v, want %+v (the reviewer's counts)", res.Usage, want)
	}
	in := r.inputs[0]
	if in.Round != 2 || in.Commit != "c2" || in.BaseCommit != "p" || in.Report.Summary != "finished in 2" ||
		in.Verification == nil || in.MaxHandoffChars != testLimits().MaxHandoffChars {
		t.Fatalf("review input %+v", in)
	}
	if got := s.inputs[0].ProtectedPaths; !slices.EqualFunc(got, [][]string{{"tests/**"}}, slices.Equal) {
		t.Fatalf("round protected paths %q", got)
	}
	st := queryStatus(t, env)
	if st.Rounds[1].Review != "approve" || st.Rounds[0].Review != "" {
		t.Fatalf("status rounds %+v", st.Rounds)
	}
}

// revise: the findings become the next round's continue handoff; the
// second completion is approved.
func TestReviewRevisesThenApproves(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1), 2: completeReport(2)}}
	r := &reviewer{verdicts: []string{"revise", "approve"}}
	limits := testLimits()
	limits.Review = true // by setting
	env := newReviewEnv(t, limits, s, r)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 || res.Review.SessionID != "review-2" {
		t.Fatalf("result %+v", res)
	}
	prev := s.inputs[1].Previous
	want := report.Report{Status: "continue", Summary: "A reviewer asked for revisions: review 1", Evidence: []string{"tests pass"},
		NextSteps: []string{"Unskip the test", "Handle negatives"}}
	if prev == nil || prev.Status != want.Status || prev.Summary != want.Summary || !slices.Equal(prev.Evidence, want.Evidence) ||
		!slices.Equal(prev.NextSteps, want.NextSteps) || prev.Blocker != "" {
		t.Fatalf("round 2 handoff %+v, want %+v", prev, want)
	}
	st := queryStatus(t, env)
	if len(st.Rounds) != 2 || st.Rounds[0].Review != "revise" || st.Rounds[1].Review != "approve" {
		t.Fatalf("status rounds %+v", st.Rounds)
	}
}

func TestReviseAtTheLastRoundIsBudgetLimited(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: completeReport(2)}}
	r := &reviewer{verdicts: []string{"revise"}}
	env := newReviewEnv(t, testLimits(), s, r)
	res, err := execute(t, env, `{"objective":"fix it","maxRounds":2,"review":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Limit != LimitRounds || res.Review != nil ||
		res.Report == nil || !strings.HasPrefix(res.Report.Summary, report.RevisionPrefix) {
		t.Fatalf("result %+v", res)
	}
}

func TestReviewerFailureFailsTheRun(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	r := &reviewer{verdicts: []string{"fail"}}
	env := newReviewEnv(t, testLimits(), s, r)
	_, err := execute(t, env, `{"objective":"fix it","review":true}`)
	appErr := applicationError(t, err, ErrTypeRoundFailed)
	if !strings.Contains(appErr.Error(), "round 1: the independent review of its completion failed") {
		t.Fatalf("error %q does not name the review", appErr.Error())
	}
	var d RoundFailedDetails
	if err := appErr.Details(&d); err != nil || d.FailedRound != 1 || d.Usage.ModelCalls != 1 {
		t.Fatalf("details %+v, %v", d, err)
	}
	if st := queryStatus(t, env); st.Outcome != OutcomeFailed || st.Usage.ModelCalls != 3 {
		t.Fatalf("status %+v", st)
	}
}

// The input overrides the setting both ways; without a reviewer no review
// activity runs.
func TestReviewSwitch(t *testing.T) {
	for _, tt := range []struct {
		name    string
		setting bool
		input   string
		want    bool
	}{
		{"off by default", false, `{"objective":"fix it"}`, false},
		{"on by setting", true, `{"objective":"fix it"}`, true},
		{"on by input", false, `{"objective":"fix it","review":true}`, true},
		{"off by input", true, `{"objective":"fix it","review":false}`, false},
		{"null input keeps the setting", true, `{"objective":"fix it","review":null}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{reports: map[int]report.Report{1: completeReport(1)}}
			r := &reviewer{verdicts: []string{"approve"}}
			limits := testLimits()
			limits.Review = tt.setting
			res, err := execute(t, newReviewEnv(t, limits, s, r), tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(r.inputs) == 1; got != tt.want || (res.Review != nil) != tt.want {
				t.Fatalf("reviewed = %v (result review %+v), want %v", got, res.Review, tt.want)
			}
		})
	}
}

// A review the workflow cannot accept across the seam is InvalidReport.
func TestInvalidReviewRefused(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	env := newEnv(t, testLimits(), s)
	env.RegisterActivityWithOptions(func(context.Context, activities.ReviewInput) (activities.ReviewOutput, error) {
		return activities.ReviewOutput{Review: report.Review{Verdict: "revise", Summary: "no", Findings: []string{}}}, nil
	}, activity.RegisterOptions{Name: activities.ReviewCompletionName})
	_, err := execute(t, env, `{"objective":"fix it","review":true}`)
	if appErr := applicationError(t, err, ErrTypeInvalidReport); !strings.Contains(appErr.Error(), "at least one finding") {
		t.Fatalf("error %v", err)
	}
}

// A provider limit during the review defers it: the run waits (phase
// waiting) and the review runs again; a verified complete never fails
// because the provider said "later".
func TestDeferredReviewWaitsAndRunsAgain(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	r := &reviewer{verdicts: []string{"defer", "defer", "approve"}}
	env := newReviewEnv(t, testLimits(), s, r)
	var during Status
	env.RegisterDelayedCallback(func() { during = queryStatus(t, env) }, time.Minute)
	start := env.Now()
	res, err := execute(t, env, `{"objective":"fix it","review":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 || res.Review == nil || res.Review.SessionID != "review-3" || len(r.inputs) != 3 {
		t.Fatalf("result %+v after %d reviews", res, len(r.inputs))
	}
	if !r.inputs[0].Deferrable || env.Now().Sub(start) != 4*time.Minute {
		t.Fatalf("reviews deferrable=%v; the run took %s, want the two 120 s waits", r.inputs[0].Deferrable, env.Now().Sub(start))
	}
	if during.Phase != PhaseWaiting || during.WaitReason != activities.DeferRateLimited {
		t.Fatalf("status during the wait: phase %s, reason %q", during.Phase, during.WaitReason)
	}
	// Every review session's usage counts: the round (110 tokens) and three reviews (55 each).
	if got := tokens(res.Usage); got != 110+3*55 {
		t.Fatalf("usage %+v", res.Usage)
	}
}
