package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/usage"
)

// play is what one candidate does: after delay (on the test clock),
// return status's report (complete verified) or fail ("fail").
type play struct {
	status string
	delay  time.Duration
	diff   int // lines changed
	scored bool
	// nothing: the candidate left its tree as the base.
	nothing bool
}

// candidates plays RunRound per candidate (plays[round][number]) and
// AdoptCandidate.
type candidates struct {
	mu      sync.Mutex
	plays   map[int]map[int]play
	inputs  []activities.RoundInput
	adopted []activities.AdoptInput
	// adoptedLocally: each adoption ran as a local activity.
	adoptedLocally []bool
	cancelled      []string // activity ids
	choice         int
	reviews        []activities.ReviewInput
}

func spentBy(k int) usage.Usage {
	return usage.Usage{ModelCalls: k, ToolCalls: 10 * k, PromptTokens: 100 * k}
}

func (c *candidates) runRound(_ context.Context, in activities.RoundInput) (activities.RoundOutput, error) {
	c.mu.Lock()
	c.inputs = append(c.inputs, in)
	p := c.plays[in.Round][in.Candidate.Number]
	c.mu.Unlock()
	k := in.Candidate.Number
	if p.status == "fail" {
		return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError("verify failed every time", activities.ErrTypeChildFailed, nil,
			activities.FailureDetails{Usage: spentBy(k)})
	}
	if p.status == "fail-kept" { // as RunRound fails a candidate of the worker's defaults
		return activities.RoundOutput{}, temporal.NewNonRetryableApplicationError("model said 401", activities.ErrTypeChildFailed, nil,
			activities.FailureDetails{Usage: spentBy(k), Candidate: &activities.CandidateFailure{Provider: "builtin", Model: "worker-model",
				Ref: fmt.Sprintf("refs/ralph/candidates/w/round-%d/%d", in.Round, k)}})
	}
	out := activities.RoundOutput{Usage: spentBy(k), SessionID: fmt.Sprintf("s%d", k), Model: "m" + in.Candidate.Model,
		Checkpoint:       &activities.Checkpoint{Commit: fmt.Sprintf("r%dk%d", in.Round, k), Parent: "base", Insertions: p.diff},
		Candidate:        &activities.CandidateWork{Agent: "builtin", Model: orElse(in.Candidate.Model, "worker-model"), Ref: fmt.Sprintf("refs/ralph/candidates/w/round-%d/%d", in.Round, k), DiffStat: fmt.Sprintf("%d lines", p.diff)},
		WorkspaceChanged: true}
	switch p.status {
	case report.StatusComplete:
		out.Report = completeReport(in.Round)
		out.Verification = &report.Verification{Command: "make test", ExitCode: 0}
	case report.StatusBlocked:
		out.Report = blockedReport()
	default:
		out.Report = continueReport(in.Round)
	}
	if p.nothing {
		out.Checkpoint.Commit, out.Candidate.Unchanged, out.Candidate.DiffStat = "base", true, ""
	}
	if p.scored {
		out.Candidate.Verification = &report.Verification{Command: "make test", ExitCode: 0}
	}
	return out, nil
}

// review chooses candidate c.choice.
func (c *candidates) review(_ context.Context, in activities.ReviewInput) (activities.ReviewOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reviews = append(c.reviews, in)
	return activities.ReviewOutput{Review: report.Review{Verdict: report.VerdictChoose, Choice: c.choice, Summary: "2 also adds the test",
		Findings: []string{}}, Usage: usage.Usage{ModelCalls: 1}}, nil
}

func (c *candidates) adopt(ctx context.Context, in activities.AdoptInput) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.adopted = append(c.adopted, in)
	c.adoptedLocally = append(c.adoptedLocally, activity.GetInfo(ctx).IsLocalActivity)
	return nil
}

func candidateLimits() activities.Limits {
	l := testLimits()
	l.Git = "local"
	l.Candidates = 3
	l.CandidateAgents = []string{"builtin", "codex"}
	l.CandidateModels = []string{"a", "b", "c"}
	return l
}

func newCandidatesEnv(t *testing.T, limits activities.Limits, c *candidates) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite workflowSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Ralph, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context) (activities.Limits, error) { return limits, nil },
		activity.RegisterOptions{Name: activities.ResolveLimitsName})
	env.RegisterActivityWithOptions(c.runRound, activity.RegisterOptions{Name: activities.RunRoundName})
	env.RegisterActivityWithOptions(c.adopt, activity.RegisterOptions{Name: activities.AdoptCandidateName})
	env.RegisterActivityWithOptions(c.review, activity.RegisterOptions{Name: activities.ReviewCompletionName})
	for round, plays := range c.plays {
		for k, p := range plays {
			is := mock.MatchedBy(func(in activities.RoundInput) bool { return in.Round == round && in.Candidate.Number == k })
			env.OnActivity(activities.RunRoundName, mock.Anything, is).After(p.delay).Return(c.runRound)
		}
	}
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.cancelled = append(c.cancelled, info.ActivityID)
	})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "fix-tests"})
	return env
}

// One candidate completes verified, one fails, one is still working: the
// verified one is chosen and adopted, the working one cancelled, and the
// run's usage is what all three spent.
func TestCandidatesVerifiedCompleteWins(t *testing.T) {
	c := &candidates{plays: map[int]map[int]play{1: {
		1: {status: report.StatusContinue, delay: time.Hour},
		2: {status: "fail", delay: time.Second},
		3: {status: report.StatusComplete, delay: 2 * time.Second, diff: 40},
	}}}
	env := newCandidatesEnv(t, candidateLimits(), c)
	res, err := execute(t, env, `{"objective":"fix it","verifyCommand":"make test","maxTokens":9000}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range c.inputs {
		if in.TokenBudget != 3000 {
			t.Errorf("candidate %d's token budget %d, want a third of the run's 9000", in.Candidate.Number, in.TokenBudget)
		}
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 1 || res.Checkpoint == nil || res.Checkpoint.Commit != "r1k3" {
		t.Fatalf("result %+v", res)
	}
	// The test clock's cancel carries no usage (a worker's does: the
	// real-stack test counts it).
	if want := spentBy(2).Add(spentBy(3)); res.Usage != want {
		t.Fatalf("usage %+v, want the sum %+v", res.Usage, want)
	}
	if fmt.Sprint(c.cancelled) != "[round-1-candidate-1]" {
		t.Fatalf("cancelled %v, want candidate 1", c.cancelled)
	}
	want := []activities.AdoptInput{{Workspace: "fix-tests", Round: 1, MaxRounds: 6, Base: "base", Commit: "r1k3", Ref: "refs/ralph/candidates/w/round-1/3"}}
	if fmt.Sprint(c.adopted) != fmt.Sprint(want) {
		t.Fatalf("adopted %+v, want %+v", c.adopted, want)
	}
	specs := map[int]activities.CandidateSpec{}
	for _, in := range c.inputs {
		specs[in.Candidate.Number] = *in.Candidate
	}
	// Candidate 1 was cancelled before it ran here; the status shows its spec.
	wantSpecs := map[int]activities.CandidateSpec{2: {Number: 2, Of: 3, Agent: "codex", Model: "b"},
		3: {Number: 3, Of: 3, Agent: "builtin", Model: "c"}}
	if fmt.Sprint(specs) != fmt.Sprint(wantSpecs) {
		t.Fatalf("specs %+v, want %+v", specs, wantSpecs)
	}
	st := queryStatus(t, env)
	got := st.Rounds[0].Candidates
	if len(got) != 3 {
		t.Fatalf("round candidates %+v", got)
	}
	checks := []struct {
		outcome string
		chosen  bool
		ref     string
	}{{CandidateCancelled, false, ""}, {CandidateFailed, false, ""}, {report.StatusComplete, true, ""}}
	for i, w := range checks {
		g := got[i]
		if g.Number != i+1 || g.Outcome != w.outcome || g.Chosen != w.chosen || g.Ref != w.ref || (i > 0 && g.Usage != spentBy(i+1)) {
			t.Errorf("candidate %d: %+v, want outcome %s chosen %v", i+1, g, w.outcome, w.chosen)
		}
	}
	if got[0].Provider != "builtin" || got[0].Model != "a" {
		t.Errorf("cancelled candidate %+v, want its spec's agent and model", got[0])
	}
	if !strings.Contains(got[2].Reason, "verified complete") || !got[2].Verified || !strings.Contains(got[1].Problem, "verify failed") {
		t.Errorf("chosen %+v, failed %+v", got[2], got[1])
	}
}

// Without a complete, the ranking decides: the smaller diff, or with
// RALPH_CANDIDATE_SCORE=verify a tree that passes the verify command.
func TestCandidatesRanking(t *testing.T) {
	for _, tt := range []struct {
		name   string
		score  string
		chosen int
		reason string
	}{
		{"smaller diff", "", 2, "the smallest diff"},
		{"verify score", activities.CandidateScoreVerify, 1, "passed the verify command"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &candidates{plays: map[int]map[int]play{
				1: {1: {status: report.StatusContinue, diff: 30, scored: true}, 2: {status: report.StatusContinue, diff: 5, delay: time.Second},
					3: {status: report.StatusBlocked, diff: 1}},
				2: {1: {status: report.StatusBlocked}, 2: {status: report.StatusBlocked}, 3: {status: report.StatusBlocked}},
			}}
			limits := candidateLimits()
			limits.CandidateScore = tt.score
			env := newCandidatesEnv(t, limits, c)
			res, err := execute(t, env, `{"objective":"fix it","verifyCommand":"make test","maxRounds":2}`)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != report.OutcomeBlocked || c.adopted[0].Commit != fmt.Sprintf("r1k%d", tt.chosen) {
				t.Fatalf("result %+v, adopted %+v", res, c.adopted)
			}
			// The second round starts from the chosen candidate's commit.
			for _, in := range c.inputs {
				if in.Round == 2 && in.Checkpoint != fmt.Sprintf("r1k%d", tt.chosen) {
					t.Fatalf("round 2 starts from %q", in.Checkpoint)
				}
			}
			got := queryStatus(t, env).Rounds[0].Candidates[tt.chosen-1]
			if !got.Chosen || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("chosen %+v, want the reason %q", got, tt.reason)
			}
		})
	}
}

// A candidate that changed nothing (a zero-line diff, finished first) ranks
// after one with the same outcome that did the work, even when the ranking
// weighs a passing verify command; a worse outcome still ranks after it.
func TestCandidatesDoNothingRanksLast(t *testing.T) {
	for _, score := range []string{"", activities.CandidateScoreVerify} {
		t.Run("score="+score, func(t *testing.T) {
			c := &candidates{plays: map[int]map[int]play{
				1: {1: {status: report.StatusContinue, nothing: true, scored: true}, 2: {status: report.StatusContinue, diff: 40, delay: time.Second},
					3: {status: report.StatusBlocked, diff: 1}},
				2: {1: {status: report.StatusBlocked}, 2: {status: report.StatusBlocked}, 3: {status: report.StatusBlocked}},
			}}
			limits := candidateLimits()
			limits.CandidateScore = score
			env := newCandidatesEnv(t, limits, c)
			if _, err := execute(t, env, `{"objective":"fix it","verifyCommand":"make test","maxRounds":2}`); err != nil {
				t.Fatal(err)
			}
			if c.adopted[0].Commit != "r1k2" {
				t.Fatalf("adopted %+v, want candidate 2, which changed something", c.adopted)
			}
			got := queryStatus(t, env).Rounds[0].Candidates[1]
			if !got.Chosen || !strings.Contains(got.Reason, "changed something") {
				t.Fatalf("chosen %+v, want the reason naming the change", got)
			}
		})
	}
}

// With the reviewer on, one review names the candidate among those that
// handed off without completing.
func TestCandidatesReviewerChooses(t *testing.T) {
	c := &candidates{plays: map[int]map[int]play{1: {
		1: {status: report.StatusContinue, diff: 1}, 2: {status: report.StatusContinue, diff: 50},
	}, 2: {1: {status: report.StatusBlocked}, 2: {status: "fail"}}}, choice: 2}
	limits := candidateLimits()
	limits.Candidates = 2
	env := newCandidatesEnv(t, limits, c)
	res, err := execute(t, env, `{"objective":"fix it","review":true,"maxRounds":2}`)
	if err != nil {
		t.Fatal(err)
	}
	reviews := c.reviews
	if c.adopted[0].Commit != "r1k2" || len(reviews) != 1 || len(reviews[0].Candidates) != 2 || reviews[0].Candidates[1].DiffStat != "50 lines" {
		t.Fatalf("adopted %+v, reviews %+v", c.adopted, reviews)
	}
	if want := spentBy(1).Add(spentBy(2)).Add(usage.Usage{ModelCalls: 1}).Add(spentBy(1)).Add(spentBy(2)); res.Usage != want || res.Status != report.OutcomeBlocked {
		t.Fatalf("usage %+v, want %+v", res.Usage, want)
	}
	got := queryStatus(t, env).Rounds[0].Candidates[1]
	if !got.Chosen || got.Reason != "the reviewer's choice: 2 also adds the test" {
		t.Fatalf("chosen %+v", got)
	}
}

// A round fails only when every candidate fails, and its error names each.
func TestCandidatesAllFail(t *testing.T) {
	c := &candidates{plays: map[int]map[int]play{1: {1: {status: "fail"}, 2: {status: "fail"}}}}
	limits := candidateLimits()
	limits.Candidates = 2
	env := newCandidatesEnv(t, limits, c)
	_, err := execute(t, env, `{"objective":"fix it"}`)
	appErr := applicationError(t, err, ErrTypeRoundFailed)
	if !strings.Contains(appErr.Error(), "every candidate failed (candidate 1 failed") || !strings.Contains(appErr.Error(), "candidate 2 failed") {
		t.Fatalf("error %v", appErr)
	}
	var d RoundFailedDetails
	if err := appErr.Details(&d); err != nil || d.Usage != spentBy(1).Add(spentBy(2)) {
		t.Fatalf("details %+v (%v)", d, err)
	}
}

// A cancel reaches every running candidate; what they spent still counts.
func TestCandidatesCancel(t *testing.T) {
	c := &candidates{plays: map[int]map[int]play{1: {1: {status: report.StatusContinue, delay: time.Hour}, 2: {status: report.StatusContinue, delay: time.Hour}}}}
	limits := candidateLimits()
	limits.Candidates = 2
	env := newCandidatesEnv(t, limits, c)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Minute)
	env.ExecuteWorkflow(WorkflowName, []byte(`{"objective":"fix it"}`), (*Continuation)(nil))
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("error %v, want cancelled", err)
	}
	if len(c.cancelled) != 2 || len(c.adopted) != 0 {
		t.Fatalf("cancelled %v adopted %v", c.cancelled, c.adopted)
	}
	if st := queryStatus(t, env); st.Outcome != OutcomeCancelled || len(st.Candidates) != 2 || st.Candidates[0].Outcome != CandidateCancelled {
		t.Fatalf("status %+v", st)
	}
}

func TestCandidatesInput(t *testing.T) {
	limits := candidateLimits()
	for input, want := range map[string]string{
		`{"objective":"x","candidates":5}`:   "candidates: must be between 1 and 4 (RALPH_MAX_CANDIDATES), got 5",
		`{"objective":"x","candidates":0}`:   "candidates: must be between 1 and 4",
		`{"objective":"x","candidates":"2"}`: "candidates: must be a JSON integer",
	} {
		env := newCandidatesEnv(t, limits, &candidates{})
		_, err := execute(t, env, input)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", input, err, want)
		}
	}
	limits.Git, limits.Candidates = "", 1
	env := newCandidatesEnv(t, limits, &candidates{})
	_, err := execute(t, env, `{"objective":"x","candidates":2}`)
	if err == nil || !strings.Contains(err.Error(), "2 candidates need git checkpoints (RALPH_GIT=local or remote)") {
		t.Errorf("error %v", err)
	}
}

// Candidates of the worker's default provider and model: every finished one
// names both, as the worker resolved them, and a failed one names the ref
// that keeps what it wrote.
func TestCandidatesNameTheDefaultProviderAndModel(t *testing.T) {
	limits := candidateLimits()
	limits.Candidates, limits.CandidateAgents, limits.CandidateModels = 2, nil, nil
	limits.CandidateDefaultAgent, limits.CandidateDefaultModels = "builtin", map[string]string{"builtin": "worker-model", "codex": "cli-model"}
	c := &candidates{plays: map[int]map[int]play{1: {1: {status: "fail-kept", delay: time.Second}, 2: {status: report.StatusComplete, delay: 2 * time.Second}}}}
	env := newCandidatesEnv(t, limits, c)
	var running []CandidateSummary
	env.RegisterDelayedCallback(func() { running = queryStatus(t, env).Candidates }, 500*time.Millisecond)
	res, err := execute(t, env, `{"objective":"fix it"}`)
	if err != nil || res.Status != report.OutcomeComplete {
		t.Fatalf("result %+v, %v", res, err)
	}
	// While they run, the worker's recorded defaults name them.
	if len(running) != 2 {
		t.Fatalf("running candidates %+v", running)
	}
	for _, r := range running {
		if r.Outcome != CandidateRunning || r.Provider != "builtin" || r.Model != "worker-model" {
			t.Errorf("running candidate %+v, want builtin and worker-model", r)
		}
	}
	got := queryStatus(t, env).Rounds[0].Candidates
	if len(got) != 2 {
		t.Fatalf("round candidates %+v", got)
	}
	failed, chosen := got[0], got[1]
	if failed.Outcome != CandidateFailed || failed.Provider != "builtin" || failed.Model != "worker-model" ||
		failed.Ref != "refs/ralph/candidates/w/round-1/1" {
		t.Errorf("failed candidate %+v, want builtin, worker-model and its ref", failed)
	}
	// The chosen one's model is the one that produced its report.
	if !chosen.Chosen || chosen.Provider != "builtin" || chosen.Model != "m" || chosen.Ref != "" {
		t.Errorf("chosen candidate %+v, want builtin and its output's model", chosen)
	}
}

// With CandidateAdoptLocal (every run a current worker starts) the chosen
// candidate is adopted by a local activity in the workflow task that chose
// it, round after round; without it (a run recorded before) by an activity.
func TestCandidatesAdoptLocallyWhenTheLimitsSaySo(t *testing.T) {
	for _, local := range []bool{false, true} {
		c := &candidates{plays: map[int]map[int]play{
			1: {1: {status: report.StatusContinue, diff: 9}, 2: {status: report.StatusContinue, diff: 3}, 3: {status: report.StatusBlocked}},
			2: {1: {status: report.StatusComplete, diff: 5}, 2: {status: report.StatusContinue, delay: time.Hour}, 3: {status: "fail"}},
		}}
		limits := candidateLimits()
		limits.CandidateAdoptLocal = local
		env := newCandidatesEnv(t, limits, c)
		res, err := execute(t, env, `{"objective":"fix it","verifyCommand":"make test"}`)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 || res.Checkpoint == nil || res.Checkpoint.Commit != "r2k1" {
			t.Fatalf("local %v: result %+v", local, res)
		}
		commits := []string{}
		for _, in := range c.adopted {
			commits = append(commits, in.Commit)
		}
		if fmt.Sprint(commits) != "[r1k2 r2k1]" || fmt.Sprint(c.adoptedLocally) != fmt.Sprint([]bool{local, local}) {
			t.Fatalf("local %v: adopted %v (locally %v), want r1k2 then r2k1, each local %v", local, commits, c.adoptedLocally, local)
		}
	}
}
