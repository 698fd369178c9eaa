package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// budgetSession plays rounds the way a session meets a run budget: a round
// takes roundTime and spends roundTokens unless the run's deadline or token
// budget cuts it first; then it hands off early (at 90 % of the time left,
// or when its next request would pass the tokens left) and names the
// budget that forced it. A forced hand-off leaves the workspace unchanged,
// as a round cut short often does.
type budgetSession struct {
	mu          sync.Mutex
	roundTime   time.Duration
	roundTokens int
	deadline    time.Time // the run's deadline (zero: no time budget)
	timeCut     bool      // the running round's time was cut by the deadline
	inputs      []activities.RoundInput
}

// install mocks RunRound on env with the session's behaviour.
func (b *budgetSession) install(env *testsuite.TestWorkflowEnvironment) {
	env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).AfterFn(func() time.Duration {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.timeCut = false
		if b.deadline.IsZero() {
			return b.roundTime
		}
		if cut := b.deadline.Sub(env.Now()) * 9 / 10; cut < b.roundTime {
			b.timeCut = true
			return cut
		}
		return b.roundTime
	}).Return(func(_ context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.inputs = append(b.inputs, in)
		out := activities.RoundOutput{Report: continueReport(in.Round), SessionID: "s", FirstRequestTokens: 1500,
			Usage:            usage.Usage{ModelCalls: 3, PromptTokens: b.roundTokens - 200, CompletionTokens: 200},
			WorkspaceChanged: true}
		if b.timeCut {
			out.BudgetForced, out.WorkspaceChanged = report.LimitTime, false
		}
		if in.TokenBudget > 0 && in.TokenBudget < b.roundTokens {
			out.Usage = usage.Usage{ModelCalls: 2, PromptTokens: in.TokenBudget - 300, CompletionTokens: 100}
			out.BudgetForced, out.WorkspaceChanged = report.LimitTokens, false
		}
		return out, nil
	})
}

// The normative examples of docs/reference.md (run budgets): the run ends
// with the budget that constrained it after two or three rounds.
func TestBudgetExamplesEndWithTheirLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		input       string
		roundTime   time.Duration
		roundTokens int
		timed       bool
		wantLimit   string
		wantUsage   int // tokens spent, when the token budget applies
	}{
		{"maxMinutes 1, 25 s rounds", `{"objective":"fix it","maxMinutes":1}`,
			25 * time.Second, 3000, true, LimitTime, 0},
		{"maxTokens 12500, 6200-token rounds", `{"objective":"fix it","maxTokens":12500}`,
			25 * time.Second, 6200, false, LimitTokens, 6200 + 6200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, testLimits(), &script{})
			b := &budgetSession{roundTime: tc.roundTime, roundTokens: tc.roundTokens}
			if tc.timed {
				b.deadline = env.Now().Add(time.Minute)
			}
			b.install(env)
			res, err := execute(t, env, tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != report.OutcomeBudgetLimited || res.Limit != tc.wantLimit || res.RoundsStarted < 2 || res.RoundsStarted > 3 {
				t.Fatalf("result: %s (%s) after %d rounds, want budget-limited (%s) after 2 or 3", res.Status, res.Limit, res.RoundsStarted, tc.wantLimit)
			}
			if res.RoundsStarted != len(b.inputs) {
				t.Fatalf("%d rounds started, %d sessions ran", res.RoundsStarted, len(b.inputs))
			}
			if got := tokens(res.Usage); tc.wantUsage > 0 && got != tc.wantUsage {
				t.Fatalf("spent %d tokens, want %d", got, tc.wantUsage)
			}
		})
	}
}

func TestRoundForcedByABudgetIsTheLast(t *testing.T) {
	// Round 2's hand-off is forced by the token budget, though plenty is
	// left by the workflow's count: the session's word decides. Without the
	// rule, forced rounds that leave the workspace unchanged run on until
	// the idle budget ends the run.
	for _, tc := range []struct {
		name   string
		report report.Report
		want   string
	}{
		{"continue", continueReport(2), report.OutcomeBudgetLimited},
		{"complete wins", completeReport(2), report.OutcomeComplete},
		{"blocked wins", blockedReport(), report.OutcomeBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{reports: map[int]report.Report{2: tc.report}}
			env := newEnv(t, testLimits(), s)
			env.OnActivity(activities.RunRoundName, mock.Anything, mock.Anything).Return(
				func(ctx context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
					out, err := s.runRound(ctx, in)
					if in.Round == 2 {
						out.BudgetForced, out.WorkspaceChanged = report.LimitTokens, false
					}
					return out, err
				})
			res, err := execute(t, env, `{"objective":"fix it","maxTokens":100000}`)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.want || res.RoundsStarted != 2 || len(s.inputs) != 2 {
				t.Fatalf("result %s (%s) after %d rounds, want %s after 2", res.Status, res.Limit, res.RoundsStarted, tc.want)
			}
			if tc.want == report.OutcomeBudgetLimited && res.Limit != LimitTokens {
				t.Fatalf("limit = %q, want tokens", res.Limit)
			}
		})
	}
}
