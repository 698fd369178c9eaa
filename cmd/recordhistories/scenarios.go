package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/workflows"
)

// scenarios are the recorded paths, one history file (or two, across a
// continue-as-new) each. Every objective that reaches the model starts with
// the scenario's tag, "scenario <name>:", which is how play finds its script.
func scenarios() []scenario {
	steerStop := []update{{name: workflows.UpdateStop, args: []any{workflows.StopRequest{Reason: "recorded stop"}}}}
	return []scenario{
		{name: "complete", input: objective("complete", "write hello.txt", `"maxRounds":4`), script: writeHello},
		{name: "blocked", input: objective("blocked", "needs a secret", ""), script: blocked},
		{name: "budget-limited", input: objective("budget-limited", "never done", `"maxRounds":2`)},
		{name: "round-failed", input: objective("round-failed", "401 in round 2", ""), script: failRound2},
		{name: "cancelled", input: objective("cancelled", "sleep", ""), cancel: true, script: sleepUntilCancelled},
		{name: "continue-as-new", input: objective("continue-as-new", "four rounds", `"maxRounds":5`), continues: true, script: fourRounds},
		{name: "invalid-input", input: `{"objective":"x","maxRounds":2.5}`},
		{name: "verified", input: objective("verified", "write hello.txt", `"verifyCommand":"test -f hello.txt"`), script: writeHello},
		{name: "stopped", input: objective("stopped", "wait for release", ""), updates: steerStop, script: waitForRelease},
		{name: "paused-resumed", input: objective("paused-resumed", "wait for release", `"maxRounds":2`),
			updates: []update{{name: workflows.UpdatePause}, {name: workflows.UpdateResume}}, script: waitForRelease},
		{name: "budget-tokens", input: objective("budget-tokens", "never done", `"maxTokens":1000`)},
		{name: "budget-idle", input: objective("budget-idle", "never done", "")},
		// Section 22: a deferred round and its durable wait, a stop during
		// such a wait, a fallback model; and the budget floor (a round spends
		// about 1,100 tokens here, its first request about 1,050: after two
		// rounds the 300 left of 2,500 cannot pay for a third).
		{name: "deferred", input: objective("deferred", "rate-limited once", ""), script: deferredOnce},
		{name: "deferred-stopped", input: objective("deferred-stopped", "rate-limited for an hour", ""), stopWhenWaiting: true, script: rateLimitedForAnHour},
		{name: "fallback", input: objective("fallback", "the primary is down", ""), script: primaryDown},
		{name: "budget-floor", input: objective("budget-floor", "never done", `"maxTokens":2500`)},
		{name: "budget-time", input: objective("budget-time", "a round past the time budget", `"maxMinutes":1`), slow: true, script: slowRound},
		{name: "invalid-report", input: objective("invalid-report", "a report the workflow refuses", ""), queue: invalidReportQueue},
		// Section 23: the independent reviewer's two verdicts, under protected paths.
		{name: "review-approve", input: objective("review-approve", "write hello.txt", `"review":true,"protectedPaths":["tests/**"]`), script: reviewed(approve)},
		{name: "review-revise", input: objective("review-revise", "write hello.txt", `"review":true,"protectedPaths":["tests/**"],"maxRounds":3`), script: reviewed(reviseRound1)},
		// Runs that last days: a review the provider deferred, a round whose
		// hand-off the token budget forced (the run's last), a run extended
		// and described while running, a pause that ends at the deadline.
		{name: "review-deferred", input: objective("review-deferred", "write hello.txt", `"review":true`), script: reviewed(deferFirstReview)},
		{name: "budget-forced", input: objective("budget-forced", "never done", `"maxTokens":1200`)},
		{name: "extended", input: objective("extended", "wait for release", `"maxRounds":1`),
			updates: []update{{name: workflows.UpdateExtend, args: []any{json.RawMessage(`{"maxRounds":2}`)}}, {name: workflows.UpdateDescribe}}, script: waitForRelease},
		{name: "pause-deadline", input: objective("pause-deadline", "wait for release", `"maxMinutes":1`),
			updates: []update{{name: workflows.UpdatePause}}, slow: true, script: waitForRelease},
		// Runs that last days, continued: a run on a versioned worker of each
		// RALPH_VERSIONING_BEHAVIOR, the pinned one continuing as new when
		// build B becomes current during its round 1; and a run rewound by
		// `starter rewind` (a reset, then the rewound signal).
		{name: "versioned-pinned-upgrade", input: objective("versioned-pinned-upgrade", "wait for release", `"maxRounds":2`),
			queue: pinnedQueue, upgrade: true, continues: true, script: waitForRelease},
		{name: "versioned-auto-upgrade", input: objective("versioned-auto-upgrade", "write hello.txt", `"maxRounds":4`),
			queue: autoUpgradeQueue, script: writeHello},
		{name: "rewound", input: objective("rewound", "rewound while round 2 runs", `"maxRounds":4,"maxTokens":100000`),
			rewind: true, script: rewoundOnce},
		// Issue 42: the rewound signal already there when the reset run
		// first checks (no timer); a paused run, signalled rewound, that
		// continues as new on the server's suggestion (the signal taken
		// first); a time budget beyond a time.Duration, refused; a round
		// started with between 10 s and 30 s of its time budget left (the
		// time floor decides it).
		{name: "rewound-fast", input: objective("rewound-fast", "rewound while round 2 runs", `"maxRounds":4,"maxTokens":100000`),
			queue: rewindQueue, rewindFast: true, script: rewoundFastOnce},
		{name: "held-continues", input: heldObjective(), heldContinues: true, continues: true, script: waitForRelease},
		{name: "minutes-too-large", input: objective("minutes-too-large", "never runs", fmt.Sprintf(`"maxMinutes":%d`, workflows.MaxBudgetMinutes+1))},
		{name: "budget-time-floor", input: objective("budget-time-floor", "a long first round", `"maxMinutes":1,"maxRounds":2`), slow: true, script: longFirstRound},
		// An objective one 4-byte character over the bound (as JSON) is refused.
		{name: "objective-too-large", input: `{"objective":"` + strings.Repeat("𝄞", workflows.MaxObjectiveBytes/4+1) + `"}`},
	}
}

// objective is a scenario's input: its tagged objective and further fields.
func objective(name, what, fields string) string {
	in := fmt.Sprintf(`{"objective":"scenario %s: %s"`, name, what)
	if fields != "" {
		in += "," + fields
	}
	return in + "}"
}

var scenarioTag = regexp.MustCompile(`scenario ([a-z-]+):`)

// play answers a model request with the script of the scenario whose tag
// the request's prompt carries.
func play(req fakeopenai.Request) fakeopenai.Response {
	if m := scenarioTag.FindStringSubmatch(req.Prompt()); m != nil {
		for _, sc := range scenarios() {
			if sc.name == m[1] && sc.script != nil {
				return sc.script(req)
			}
		}
	}
	return handOff(req)
}

// The recorded worker's model and its fallback.
const (
	primaryModel  = "scripted"
	fallbackModel = "scripted-fallback"
)

// sessions counts the sessions each deferral scenario started.
var sessions = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func session(name string, step int) int {
	sessions.Lock()
	defer sessions.Unlock()
	if step == 0 {
		sessions.n[name]++
	}
	return sessions.n[name]
}

var done = fakeopenai.ReportArgs{Status: "complete", Summary: "hello.txt written", Evidence: []string{"hello.txt exists"}}

func handOff(req fakeopenai.Request) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{Status: "continue",
		Summary: fmt.Sprintf("round %d done", req.Round()), NextSteps: []string{"keep going"}}))
}

func command(cmd string, more ...any) fakeopenai.Response {
	args := map[string]any{"command": cmd}
	for i := 0; i+1 < len(more); i += 2 {
		args[more[i].(string)] = more[i+1]
	}
	return fakeopenai.Tools(fakeopenai.CallJSON("run_command", args))
}

func writeHello(req fakeopenai.Request) fakeopenai.Response {
	switch {
	case req.Round() == 1 && req.Step() == 0:
		return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "hello.txt", "content": "hello\n"}))
	case req.Round() == 1:
		return handOff(req)
	}
	return fakeopenai.Tools(fakeopenai.SubmitReport(done))
}

func blocked(fakeopenai.Request) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReport(fakeopenai.ReportArgs{Status: "blocked", Summary: "cannot continue", Blocker: "the deploy key is missing"}))
}

func failRound2(req fakeopenai.Request) fakeopenai.Response {
	if req.Round() == 2 {
		return fakeopenai.Status(401, "invalid api key")
	}
	return handOff(req)
}

func sleepUntilCancelled(req fakeopenai.Request) fakeopenai.Response {
	if req.Step() == 0 {
		return command("echo started > started.txt; sleep 120")
	}
	return fakeopenai.Tools(fakeopenai.SubmitReport(done))
}

// waitForRelease holds each round until the recorder releases it (steer).
func waitForRelease(req fakeopenai.Request) fakeopenai.Response {
	if req.Step() == 0 {
		return command(fmt.Sprintf("echo %d > started.txt; while [ ! -e release-%d ]; do sleep 0.1; done", req.Round(), req.Round()))
	}
	return handOff(req)
}

func slowRound(req fakeopenai.Request) fakeopenai.Response {
	if req.Step() == 0 {
		return command("sleep 62", "timeout_seconds", 120)
	}
	return handOff(req)
}

// fourRounds changes the workspace every round, so the idle budget never
// ends the run before it crosses the continue-as-new.
func fourRounds(req fakeopenai.Request) fakeopenai.Response {
	switch {
	case req.Step() == 0:
		return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": fmt.Sprintf("round-%d.txt", req.Round()), "content": "done\n"}))
	case req.Round() == 4:
		return fakeopenai.Tools(fakeopenai.SubmitReport(done))
	}
	return handOff(req)
}

// deferredOnce: the first session is told to wait longer than the worker
// sleeps in a session (MaxRetryAfter is 1 s here): the round is deferred.
func deferredOnce(req fakeopenai.Request) fakeopenai.Response {
	if session("deferred", req.Step()) == 1 {
		return fakeopenai.RateLimited("3")
	}
	return fakeopenai.Tools(fakeopenai.SubmitReport(done))
}

// rewoundOnce: round 1 hands off; round 2's first session runs a command
// until the recorder rewinds the run to round 1; the rewound round 2 completes.
func rewoundOnce(req fakeopenai.Request) fakeopenai.Response {
	n := session("rewound", req.Step())
	switch {
	case req.Round() == 1:
		return handOff(req)
	case n == 2 && req.Step() == 0:
		return command("echo 2 > started.txt; sleep 300", "timeout_seconds", 600)
	case n == 2:
		return handOff(req)
	}
	return fakeopenai.Tools(fakeopenai.SubmitReport(done))
}

func rateLimitedForAnHour(fakeopenai.Request) fakeopenai.Response {
	return fakeopenai.RateLimited("3600")
}

func primaryDown(req fakeopenai.Request) fakeopenai.Response {
	if req.Chat.Model == primaryModel {
		return fakeopenai.Status(503, "the primary is overloaded")
	}
	return fakeopenai.Tools(fakeopenai.SubmitReport(done))
}

// reviewed scripts a reviewed run: the rounds write hello.txt and weaken a
// protected test (refused once, restored), the reviewer answers review.
func reviewed(review func(req fakeopenai.Request) fakeopenai.Response) func(fakeopenai.Request) fakeopenai.Response {
	return func(req fakeopenai.Request) fakeopenai.Response {
		if req.IsReview() {
			return review(req)
		}
		if req.Step() == 0 {
			return command("printf 'hello\\n' > hello.txt && mkdir -p tests && echo weakened > tests/t.sh")
		}
		return fakeopenai.Tools(fakeopenai.SubmitReport(done)) // refused once: tests/t.sh is restored
	}
}

func approve(fakeopenai.Request) fakeopenai.Response {
	return fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "approve", Summary: "hello.txt holds hello"}))
}

func reviseRound1(req fakeopenai.Request) fakeopenai.Response {
	if req.Round() == 1 {
		return fakeopenai.Tools(fakeopenai.SubmitReview(fakeopenai.ReviewArgs{Verdict: "revise", Summary: "hello.txt lacks a newline check",
			Findings: []string{"Check that hello.txt ends with a newline"}}))
	}
	return approve(req)
}

func deferFirstReview(req fakeopenai.Request) fakeopenai.Response {
	if session("review-deferred", req.Step()) == 1 {
		return fakeopenai.RateLimited("3")
	}
	return approve(req)
}

// rewoundFastOnce is rewoundOnce for the rewound-fast scenario.
func rewoundFastOnce(req fakeopenai.Request) fakeopenai.Response {
	n := session("rewound-fast", req.Step())
	switch {
	case req.Round() == 1:
		return handOff(req)
	case n == 2 && req.Step() == 0:
		return command("echo 2 > started.txt; sleep 300", "timeout_seconds", 600)
	case n == 2:
		return handOff(req)
	}
	return fakeopenai.Tools(fakeopenai.SubmitReport(done))
}

// heldObjective is held-continues' input: an objective of 250,000
// characters, so each describe adds about 250 KB to the paused run's
// history and a few reach the suggestion (suggestBytes).
func heldObjective() string {
	return objective("held-continues", "paused until moved "+strings.Repeat("x", 250_000), `"maxRounds":2`)
}

// longFirstRound: round 1 takes 35 s of the one-minute budget, so round 2
// starts with about 24 s left: above a 10 s floor, below a 30 s one.
func longFirstRound(req fakeopenai.Request) fakeopenai.Response {
	if req.Round() == 1 && req.Step() == 0 {
		return command("sleep 35", "timeout_seconds", 120)
	}
	return handOff(req)
}
