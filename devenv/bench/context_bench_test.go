package bench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// contextRoundCalls is how many commands the scripted model would run in
// one round if nothing stopped it; every one prints contextRoundOutput
// characters.
const (
	contextRoundCalls  = 60
	contextRoundOutput = 20000
)

// contextScript is a model that runs contextRoundCalls commands of
// contextRoundOutput characters each and hands off (continue) when only
// submit_report is offered or its calls are spent. A server with limit > 0
// refuses, like a provider, any request past that many tokens.
func contextScript(limit int, noUsage bool) fakeopenai.Script {
	return fakeopenai.Script{ContextLimit: limit, Rule: func(req fakeopenai.Request) fakeopenai.Response {
		if len(req.Chat.Tools) == 1 || req.Step() >= contextRoundCalls {
			return submitContinue("handed off with the context nearly full")
		}
		r := toolCall("run_command", map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo %d", contextRoundOutput, req.Step())})
		r.NoUsage = noUsage
		return r
	}}
}

// BenchmarkContextRound runs one Ralph round (RunRound in the SDK's test
// activity environment, the worker's own configuration) against a model
// that would make 60 calls each printing 20,000 characters, with
// RALPH_CONTEXT_TOKENS set to the provider's window (which refuses anything
// larger). It reports the largest request of the round as a share of the
// window (the server's count of the body), the prompt tokens summed over
// the round (the server's count, which is also the usage it reports), the model calls made, and the rounds that ended with a valid
// hand-off. Run: go test -run '^$' -bench ContextRound -benchtime 5x ./bench/
func BenchmarkContextRound(b *testing.B) {
	for _, v := range []struct {
		window  int
		noUsage bool
	}{{131072, false}, {131072, true}, {32768, false}, {20000, false}} {
		b.Run(fmt.Sprintf("window=%d/usage=%v", v.window, !v.noUsage), func(b *testing.B) {
			benchContextRound(b, v.window, v.noUsage)
		})
	}
}

func benchContextRound(b *testing.B, window int, noUsage bool) {
	var maxShare float64
	var served, calls, handoffs, compacted, refused, rounds int
	for i := 0; b.Loop(); i++ {
		model := fakeopenai.NewServer(contextScript(window, noUsage))
		cfg := roundWorkerConfig(b, model, config.MapEnv{"RALPH_CONTEXT_TOKENS": strconv.Itoa(window)})
		val, err := roundRunner(b, cfg)("fill the context", "ctx")
		rounds++
		if err == nil {
			var out activities.RoundOutput
			if err := val.Get(&out); err != nil {
				b.Fatal(err)
			}
			if out.Report.Status == "continue" {
				handoffs++
			}
			calls += out.Usage.ModelCalls
		} else {
			b.Logf("round %d ended without a report: %v", i, err)
		}
		for _, r := range model.Requests() {
			served += r.PromptTokens()
			if share := float64(r.PromptTokens()) / float64(window); share > maxShare {
				maxShare = share
			}
			if len(r.Chat.Messages) == 4 && len(r.Chat.Tools) == 1 {
				compacted++
			}
			if r.PromptTokens() > window {
				refused++
			}
		}
		model.Close()
	}
	b.ReportMetric(100*maxShare, "max-request-%")
	b.ReportMetric(100*float64(agent.EstimateTokens(strings.Repeat("x", contextRoundOutput)))/float64(window), "one-result-%")
	b.ReportMetric(float64(served)/float64(rounds), "prompt-tokens/round")
	b.ReportMetric(float64(calls)/float64(rounds), "model-calls/round")
	b.ReportMetric(float64(handoffs)/float64(rounds), "handoffs/round")
	b.ReportMetric(float64(compacted)/float64(rounds), "compacted/round")
	b.ReportMetric(float64(refused)/float64(rounds), "refused/round")
}
