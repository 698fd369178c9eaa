package workflows

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
)

// guidanceOf lists each round input's guidance, in the order rounds ran.
func guidanceOf(s *script) []string {
	var g []string
	for _, in := range s.inputs {
		g = append(g, in.Guidance)
	}
	return g
}

func TestGuidanceReachesExactlyTheNextRound(t *testing.T) {
	s := &script{reports: map[int]report.Report{4: completeReport(4)}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	first := sendUpdate(env, 15*time.Second, UpdateGuide, GuideRequest{Text: "  Fix the lexer first.  "})
	second := sendUpdate(env, 16*time.Second, UpdateGuide, GuideRequest{Text: "Keep the tests."})
	empty := sendUpdate(env, 17*time.Second, UpdateGuide, GuideRequest{Text: " \n "})
	long := sendUpdate(env, 18*time.Second, UpdateGuide, GuideRequest{Text: strings.Repeat("ü", MaxGuidanceChars-10)})
	var pending, delivered Status
	env.RegisterDelayedCallback(func() { pending = queryStatus(t, env) }, 19*time.Second)
	env.RegisterDelayedCallback(func() { delivered = queryStatus(t, env) }, 35*time.Second)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if first.rejected != nil || second.rejected != nil {
		t.Fatalf("guide updates refused: %v, %v", first.rejected, second.rejected)
	}
	if empty.rejected == nil || !strings.Contains(empty.rejected.Error(), "text is empty") {
		t.Fatalf("empty guidance = %+v, want refused as empty", empty)
	}
	if long.rejected == nil || !strings.Contains(long.rejected.Error(), "over the limit of 4000") {
		t.Fatalf("guidance past the pending limit = %+v, want refused naming the limit", long)
	}
	want := []string{"", "", "Fix the lexer first.\n\nKeep the tests.", ""}
	if got := guidanceOf(s); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("round inputs' guidance = %q, want %q", got, want)
	}
	if pending.Guidance == nil || pending.Guidance.Pending != want[2] || pending.Guidance.DeliveredRound != 0 {
		t.Fatalf("status while pending = %+v", pending.Guidance)
	}
	if delivered.Guidance == nil || delivered.Guidance.Pending != "" || delivered.Guidance.DeliveredRound != 3 {
		t.Fatalf("status once delivered = %+v", delivered.Guidance)
	}
}

func TestDeferredRoundCarriesItsGuidanceAgain(t *testing.T) {
	s := &script{reports: map[int]report.Report{3: completeReport(3)},
		deferrals: map[int][]activities.Deferred{2: {{Reason: activities.DeferRateLimited, RetryAfterSeconds: 60}}}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	sendUpdate(env, 5*time.Second, UpdateGuide, GuideRequest{Text: "Smaller steps."})
	if _, err := execute(t, env, `{"objective":"fix it"}`); err != nil {
		t.Fatal(err)
	}
	// Round 2's deferred session and its rerun are one round: both carry it.
	want := []string{"", "Smaller steps.", "Smaller steps.", ""}
	if got := guidanceOf(s); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("round inputs' guidance = %q, want %q", got, want)
	}
}

func TestPendingGuidanceCrossesContinueAsNew(t *testing.T) {
	s := &script{}
	limits := testLimits()
	limits.RoundsPerRun = 2
	env := newEnv(t, limits, s)
	slowRounds(env, s, 10*time.Second)
	sendUpdate(env, 15*time.Second, UpdateGuide, GuideRequest{Text: "Look at main.go."})
	env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it","approve":"rounds:5"}`), (*Continuation)(nil))
	cont := decodeContinuation(t, env.GetWorkflowError())
	if cont.Guidance != "Look at main.go." || cont.Approve != "rounds:5" || cont.NextRound != 3 {
		t.Fatalf("continuation = %+v", cont)
	}

	env2 := newEnv(t, activities.Limits{}, s)
	env2.SetContinuedExecutionRunID("run-1")
	slowRounds(env2, s, 10*time.Second)
	env2.ExecuteWorkflow(WorkflowName, nil, &cont)
	if got := s.inputs[2]; got.Round != 3 || got.Guidance != "Look at main.go." {
		t.Fatalf("round 3 input = round %d, guidance %q", got.Round, got.Guidance)
	}
}

func TestApprovalHoldsACompleteUntilApproved(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: completeReport(2), 3: completeReport(3)}}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	var phases []string
	env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		p, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(temporal.NewSearchAttributeKeyKeyword(SearchAttrPhase))
		phases = append(phases, p)
	}).Return(nil)
	early := sendUpdate(env, 5*time.Second, UpdateApprove, ApproveRequest{})
	var waiting Status
	env.RegisterDelayedCallback(func() { waiting = queryStatus(t, env) }, time.Hour)
	noReason := sendUpdate(env, 2*time.Hour, UpdateReject, ReasonRequest{Reason: " "})
	reject := sendUpdate(env, 2*time.Hour+time.Second, UpdateReject, ReasonRequest{Reason: "The README still says v1."})
	approve := sendUpdate(env, 5*time.Hour, UpdateApprove, ApproveRequest{})
	res, err := execute(t, env, `{"objective":"fix it","approve":"complete"}`)
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 3 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if early.rejected == nil || !strings.Contains(early.rejected.Error(), "not awaiting approval (phase running)") {
		t.Fatalf("approve during a round = %+v, want refused naming why", early)
	}
	if noReason.rejected == nil || !strings.Contains(noReason.rejected.Error(), "reason is empty") {
		t.Fatalf("reject without a reason = %+v", noReason)
	}
	if reject.rejected != nil || approve.rejected != nil {
		t.Fatalf("reject %v, approve %v", reject.rejected, approve.rejected)
	}
	if waiting.Phase != PhaseAwaitingApproval || waiting.Round != 2 || waiting.Outcome != "" {
		t.Fatalf("status during the wait = phase %s, round %d, outcome %q", waiting.Phase, waiting.Round, waiting.Outcome)
	}
	// The wait ran no round; the rejection's reason is round 3's guidance.
	want := []string{"", "", "The README still says v1."}
	if got := guidanceOf(s); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("round inputs' guidance = %q, want %q", got, want)
	}
	if got := strings.Join(phases, ","); got != "starting,running,running,awaiting-approval,running,awaiting-approval,finished" {
		t.Fatalf("phases upserted = %s", got)
	}
}

func TestApprovalWaitTimesOutStopped(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	limits := testLimits()
	limits.Approve, limits.ApprovalTimeoutHours = ApproveComplete, 2
	env := newEnv(t, limits, s)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeStopped || res.Reason == nil || *res.Reason != "no approval within 2 hours" ||
		res.RoundsStarted != 1 || len(s.inputs) != 1 {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

func TestApprovalEveryNthRound(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	var waiting Status
	env.RegisterDelayedCallback(func() { waiting = queryStatus(t, env) }, time.Hour)
	sendUpdate(env, 2*time.Hour, UpdateApprove, ApproveRequest{})
	reject := sendUpdate(env, 4*time.Hour, UpdateReject, ReasonRequest{Reason: "Too broad."})
	res, err := execute(t, env, `{"objective":"fix it","maxRounds":5,"approve":"rounds:2"}`)
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != LimitRounds || len(s.inputs) != 5 {
		t.Fatalf("result = %+v, %v after %d rounds", res, err, len(s.inputs))
	}
	if waiting.Phase != PhaseAwaitingApproval || waiting.Round != 2 {
		t.Fatalf("status after round 2 = phase %s, round %d", waiting.Phase, waiting.Round)
	}
	if reject.rejected != nil {
		t.Fatal(reject.rejected)
	}
	want := []string{"", "", "", "", "Too broad."}
	if got := guidanceOf(s); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("round inputs' guidance = %q, want %q", got, want)
	}
}

func TestStopEndsAnApprovalWait(t *testing.T) {
	s := &script{reports: map[int]report.Report{1: completeReport(1)}}
	env := newEnv(t, testLimits(), s)
	sendUpdate(env, time.Hour, UpdateStop, StopRequest{Reason: "not today"})
	res, err := execute(t, env, `{"objective":"fix it","approve":"complete"}`)
	if err != nil || res.Status != report.OutcomeStopped || *res.Reason != "not today" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

func TestApproveInputIsChecked(t *testing.T) {
	for _, bad := range []string{`"rounds:0"`, `"rounds:x"`, `"always"`, `true`, `""`} {
		env := newEnv(t, testLimits(), &script{})
		_, err := execute(t, env, `{"objective":"fix it","approve":`+bad+`}`)
		appErr := applicationError(t, err, ErrTypeInvalidInput)
		if !strings.Contains(appErr.Error(), "approve") {
			t.Errorf("approve %s: error %q does not name the field", bad, appErr.Error())
		}
	}
}

func TestEventsAreNotifiedWithoutWaiting(t *testing.T) {
	s := &script{reports: map[int]report.Report{2: completeReport(2)},
		deferrals: map[int][]activities.Deferred{1: {{Reason: activities.DeferRateLimited, RetryAfterSeconds: 60}}}}
	limits := testLimits()
	limits.NotifyEvents = strings.Split(DefaultNotifyEvents, ",")
	env := newEnv(t, limits, s)
	env.RegisterWorkflowWithOptions(RalphNotify, workflow.RegisterOptions{Name: NotifyWorkflowName})
	// The activity runs on the test environment's goroutines.
	var mu sync.Mutex
	var sent []activities.NotifyInput
	// The end event's detached child: the test environment stops with its
	// parent, so the child's start is what is recorded.
	env.OnWorkflow(NotifyWorkflowName, mock.Anything, mock.Anything).Return(
		func(_ workflow.Context, in activities.NotifyInput) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, in)
			return nil
		})
	// The receiver never answers in time: the run goes on regardless.
	env.RegisterActivityWithOptions(func(_ context.Context, in activities.NotifyInput) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, in)
		return errors.New("the receiver could not be reached")
	}, activity.RegisterOptions{Name: activities.NotifyName})
	sendUpdate(env, 3*time.Hour, UpdateApprove, ApproveRequest{})
	res, err := execute(t, env, `{"objective":"fix it","approve":"complete"}`)
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("result = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, in := range sent {
		if !slices.Contains(got, in.Event) {
			got = append(got, in.Event)
		}
	}
	if strings.Join(got, ",") != "waiting,awaiting-approval,complete" {
		t.Fatalf("events sent = %q", got)
	}
	last := sent[len(sent)-1]
	if last.Status != report.OutcomeComplete || last.Round != 2 || last.WorkflowID != "fix-tests" || !strings.Contains(last.Text, "complete") {
		t.Fatalf("complete event = %+v", last)
	}
}
