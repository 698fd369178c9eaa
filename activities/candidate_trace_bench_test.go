package activities_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/gitws"
)

// gitTally counts, per phase of a round and per git subcommand, the
// commands run, their wall time and their CPU (gitws.Trace).
type gitTally struct {
	mu    sync.Mutex
	phase string
	n     map[string]int
	took  map[string]time.Duration
	cpu   map[string]time.Duration
	order []string
}

func (g *gitTally) add(c gitws.TracedCommand) {
	sub := c.Args[0]
	for i := 0; i < len(c.Args); i++ {
		if c.Args[i] == "-c" {
			i++
			continue
		}
		sub = c.Args[i]
		break
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.phase + " " + sub
	if _, ok := g.n[k]; !ok {
		g.order = append(g.order, k)
	}
	g.n[k]++
	g.took[k] += c.Took
	g.cpu[k] += c.CPU
}

func (g *gitTally) set(phase string) {
	g.mu.Lock()
	g.phase = phase
	g.mu.Unlock()
}

// BenchmarkCandidateRoundTrace runs rounds of one plain attempt and rounds
// of three candidates (RunRound side by side, then AdoptCandidate) on a
// real git workspace with an instant model, and logs each phase's wall
// clock and every git command it ran with its CPU: where a 3-candidate
// round's extra time goes (the round benchmark's steps, without the
// server).
func BenchmarkCandidateRoundTrace(b *testing.B) {
	const rounds = 8
	script := fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if req.Step() == 0 {
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{
				"path": fmt.Sprintf("r%d-c%d.txt", req.Round(), req.Candidate()), "content": "x\n"}))
		}
		return fakeopenai.Tools(fakeopenai.SubmitReport(validContinue))
	}}
	for _, k := range []int{1, 3} {
		f := newBenchFixture(b, script)
		envs := []*testsuite.TestActivityEnvironment{f.env}
		for len(envs) < k {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			f.acts.Register(env)
			envs = append(envs, env)
		}
		tally := &gitTally{n: map[string]int{}, took: map[string]time.Duration{}, cpu: map[string]time.Duration{}}
		stop := gitws.Trace(tally.add)
		var walls []time.Duration
		for r := 1; r <= rounds; r++ {
			in := activities.RoundInput{Objective: "write files", Round: r, MaxRounds: rounds, Workspace: "ws", MaxHandoffChars: 16384}
			tally.set("round")
			start := time.Now()
			outs := make([]activities.RoundOutput, k)
			var wg sync.WaitGroup
			for i := range k {
				wg.Go(func() {
					in := in
					if k > 1 {
						in.Candidate = &activities.CandidateSpec{Number: i + 1, Of: k}
					}
					val, err := envs[i].ExecuteActivity(activities.RunRoundName, in)
					if err != nil {
						b.Error(err)
						return
					}
					if err := val.Get(&outs[i]); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow()
			}
			if k > 1 {
				tally.set("adopt")
				c := outs[0]
				if _, err := f.env.ExecuteActivity(activities.AdoptCandidateName, activities.AdoptInput{Workspace: "ws", Round: r, MaxRounds: rounds,
					Base: c.Checkpoint.Parent, Commit: c.Checkpoint.Commit, Ref: c.Candidate.Ref}); err != nil {
					b.Fatal(err)
				}
			}
			walls = append(walls, time.Since(start))
		}
		stop()
		slices.Sort(walls)
		var lines []string
		for _, key := range tally.order {
			lines = append(lines, fmt.Sprintf("TRACE %-22s x%4.1f  wall %6.1fms  cpu %6.1fms  per round", key, float64(tally.n[key])/rounds,
				float64(tally.took[key].Microseconds())/1000/rounds, float64(tally.cpu[key].Microseconds())/1000/rounds))
		}
		fmt.Printf("TRACE %d candidate(s): round p50 %v (min %v)\n%s\n", k, walls[len(walls)/2].Round(time.Millisecond), walls[0].Round(time.Millisecond), strings.Join(lines, "\n"))
	}
	for b.Loop() {
	}
}

// newBenchFixture is newFixture's git-on worker for a benchmark.
func newBenchFixture(b *testing.B, script fakeopenai.Script) *fixture {
	srv := fakeopenai.NewServer(script)
	b.Cleanup(srv.Close)
	base := b.TempDir()
	cfg := activities.DefaultConfig()
	cfg.WorkspaceRoot = base + "/workspaces"
	cfg.SessionDir = base + "/sessions"
	cfg.Agent.BaseURL, cfg.Agent.APIKey, cfg.Agent.Model = srv.BaseURL(), testKey, "fake-model"
	cfg.Agent.CallTimeout = 20 * time.Second
	cfg.HeartbeatInterval = time.Second
	cfg.Git.Mode = gitws.ModeLocal
	acts, err := activities.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: context.Background()})
	acts.Register(env)
	return &fixture{srv: srv, cfg: cfg, acts: acts, env: env}
}
