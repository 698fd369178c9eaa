package workflows

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/report"
)

func TestExtendRaisesARunningRunsBudgets(t *testing.T) {
	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	ext := sendUpdate(env, 5*time.Second, UpdateExtend, json.RawMessage(`{"maxRounds":4,"maxTokens":5000,"maxMinutes":3}`))
	desc := sendUpdate(env, 6*time.Second, UpdateDescribe)
	res, err := execute(t, env, `{"objective":"fix it","maxRounds":2,"maxTokens":1000,"maxMinutes":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if ext.rejected != nil || ext.failed != nil || ext.ack != (Ack{Phase: PhaseRunning, Round: 1}) {
		t.Fatalf("extend = %+v", ext)
	}
	if res.Status != report.OutcomeBudgetLimited || res.Limit != LimitRounds || res.RoundsStarted != 4 || len(s.inputs) != 4 {
		t.Fatalf("result = %+v after %d rounds, want the raised cap of 4", res, len(s.inputs))
	}
	// The deadline moved by the two minutes added; the token budget the round got is the raised one.
	if got := s.inputs[1].RunDeadline.Sub(s.inputs[0].RunDeadline); got != 2*time.Minute || s.inputs[1].TokenBudget != 5000-110 {
		t.Fatalf("round 2 got deadline +%s and %d tokens", got, s.inputs[1].TokenBudget)
	}
	st := queryStatus(t, env)
	if st.MaxRounds != 4 || *st.Budget.MaxTokens != 5000 || *st.Budget.MaxMinutes != 3 {
		t.Fatalf("status = %d rounds, budget %+v", st.MaxRounds, st.Budget)
	}
	if !desc.done || desc.rejected != nil || desc.status.Phase != PhaseRunning || desc.status.MaxRounds != 4 || desc.status.Objective != "fix it" {
		t.Fatalf("describe = %+v", desc)
	}
}

func TestExtendValidatorNamesWhatIsWrong(t *testing.T) {
	limits := testLimits()
	limits.MaxRunMinutes = 120
	l := &loop{limits: limits, maxRounds: 3, budget: RunBudget{MaxTokens: 1000, MaxMinutes: 30}, status: Status{Phase: PhaseRunning}}
	for _, tc := range []struct{ req, want string }{
		{`{}`, "names nothing to raise"},
		{`[]`, "a JSON object"},
		{`{"maxRounds":2}`, "maxRounds: 2 is lower than the run's 3"},
		{`{"maxTokens":1.5}`, "maxTokens: must be a JSON integer"},
		{`{"maxTokens":"2000"}`, "maxTokens: must be a JSON integer"},
		{`{"maxMinutes":121}`, "maxMinutes: must be between 1 and 120 (the deployment's ceiling RALPH_MAX_RUN_MINUTES)"},
		{`{"maxRounds":7}`, "maxRounds: must be between 1 and 6"},
		{`{"maxRounds":4,"rounds":5}`, "rounds is not a known field"},
	} {
		if err := l.validateExtend(json.RawMessage(tc.req)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("extend %s: %v, want an error containing %q", tc.req, err, tc.want)
		}
	}
	if err := l.validateExtend(json.RawMessage(`{"maxRounds":3,"maxMinutes":120}`)); err != nil {
		t.Errorf("a valid extend was refused: %v", err)
	}
	unlimited := &loop{limits: limits, maxRounds: 3, status: Status{Phase: PhaseRunning}}
	if err := unlimited.validateExtend(json.RawMessage(`{"maxTokens":5}`)); err == nil || !strings.Contains(err.Error(), "maxTokens: the run has no such budget") {
		t.Errorf("raising a budget the run lacks: %v", err)
	}
	l.status.Phase = PhaseFinished
	if err := l.validateExtend(json.RawMessage(`{"maxRounds":4}`)); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Errorf("extend of a finished run: %v", err)
	}
}

// A time budget whose deadline would overflow time.Duration (issue 42: it
// ended the run at once as budget-limited, time) is refused, at the start
// and through extend, naming the field and the largest accepted value;
// the largest accepted one runs.
func TestTimeBudgetsBeyondADurationAreRefused(t *testing.T) {
	over := strconv.Itoa(MaxBudgetMinutes + 1)
	_, err := execute(t, newEnv(t, testLimits(), &script{}), `{"objective":"fix it","maxMinutes":`+over+`}`)
	msg := applicationError(t, err, ErrTypeInvalidInput).Error()
	if !strings.Contains(msg, "maxMinutes") || !strings.Contains(msg, strconv.Itoa(MaxBudgetMinutes)) {
		t.Fatalf("an overflowing maxMinutes: %v", err)
	}

	s := &script{}
	env := newEnv(t, testLimits(), s)
	slowRounds(env, s, 10*time.Second)
	ext := sendUpdate(env, 5*time.Second, UpdateExtend, json.RawMessage(`{"maxMinutes":`+over+`}`))
	res, err := execute(t, env, `{"objective":"fix it","maxRounds":2,"maxMinutes":`+strconv.Itoa(MaxBudgetMinutes)+`}`)
	if err != nil || res.Status != report.OutcomeBudgetLimited || res.Limit != LimitRounds || len(s.inputs) != 2 {
		t.Fatalf("the largest time budget: %+v, %v after %d rounds", res, err, len(s.inputs))
	}
	if ext.rejected == nil || !strings.Contains(ext.rejected.Error(), "maxMinutes") || !strings.Contains(ext.rejected.Error(), strconv.Itoa(MaxBudgetMinutes)) {
		t.Fatalf("an overflowing extend: %+v", ext)
	}
	if s.inputs[1].RunDeadline.Sub(env.Now()) < 290*365*24*time.Hour {
		t.Fatalf("round 2's deadline %v", s.inputs[1].RunDeadline)
	}
}
