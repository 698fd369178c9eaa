package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/activities"
	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
	"github.com/ralph-temporal/ralph/workflows"
)

// AgentsConfig sizes the agent providers' fixed-cost benchmark.
type AgentsConfig struct {
	Rounds int      // rounds per provider, all in one run
	Kinds  []string // RALPH_AGENT values, in table order
	CLIDir string   // where the CLIs are (scripts/install-agent-clis.sh)
}

// agentBinaries are the CLIs' binaries in CLIDir, by RALPH_AGENT value.
var agentBinaries = map[string]string{"claude-code": "claude", "codex": "codex", "opencode": "opencode"}

// agentRoundTimes is what one provider's rounds measured.
type agentRoundTimes struct {
	toFirstRequest, toFirstTurn, sessionToRequest, reportToEnd, whole []time.Duration
	requests                                                          []int // per round
}

// Agents measures a round's fixed cost per agent provider on the real
// worker binary: from the round's start to the first model request
// reaching the scripted server, and from the accepted report to the round's
// end, with a model that submits its report at once.
func (h *Harness) Agents(ctx context.Context, cfg AgentsConfig) (Section, error) {
	sec := Section{
		Title: "Agent providers: a round's fixed cost",
		Intro: fmt.Sprintf("One worker process (the real binary, real bubblewrap, `RALPH_SANDBOX=bwrap`) per provider on the dev server; one run "+
			"of %d rounds each, whose model (the scripted server, speaking each CLI's API) calls the report tool at once with a `continue` report, "+
			"so a round is nothing but its fixed cost. From the history: the round activity's start and completion; from the round's transcript: "+
			"the session's start and the accepted report (the `submit_report` result); from the scripted server: when each request arrived. "+
			"Medians over the %d rounds, min and max beside them. The CLIs are the versions pinned in devenv/agentclis.", cfg.Rounds, cfg.Rounds),
	}
	tbl := Table{Header: []string{"RALPH_AGENT", "rounds", "requests per round p50", "round start → first request ms p50 (min–max)",
		"round start → first request offering the report tool ms p50", "session start → first request ms p50",
		"report accepted → round end ms p50 (min–max)", "whole round ms p50"}}
	for _, kind := range cfg.Kinds {
		got, err := h.agentRounds(ctx, kind, cfg)
		if err != nil {
			tbl.Add(kind, "failed: "+err.Error())
			continue
		}
		tbl.Add(kind, strconv.Itoa(len(got.whole)), strconv.Itoa(medianInt(got.requests)), spread(got.toFirstRequest), ms(Median(got.toFirstTurn)),
			ms(Median(got.sessionToRequest)), spread(got.reportToEnd), ms(Median(got.whole)))
	}
	sec.Tables = []Table{tbl}
	sec.Notes = append(sec.Notes,
		"round start → first request: the activity's start (history) to the first request of the round at the scripted server; for a CLI it holds "+
			"the private home, the report socket and gateway, the sandbox, the CLI's own start-up and its first request through the gateway "+
			"(opencode sends a title request without tools first; the next column is the round's first turn, the first request offering the report tool).",
		"report accepted → round end: the report tool's result in the transcript to the activity's completion (history): stopping the CLI "+
			"(killing the sandbox's PID namespace), removing its home, then what every round does (fingerprint, transcript, the activity's answer).")
	return sec, nil
}

// agentRounds runs one provider's rounds and reads their times.
func (h *Harness) agentRounds(ctx context.Context, kind string, cfg AgentsConfig) (agentRoundTimes, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.Rounds)*2*time.Minute)
	defer cancel()
	script := fakeopenai.AgentScript{Report: func(int, string) fakeopenai.ReportArgs {
		return fakeopenai.ReportArgs{Status: "continue", Summary: "Nothing to do yet.", Evidence: []string{}, NextSteps: []string{"keep going"}}
	}}
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: script.Rule})
	defer model.Close()
	extra := map[string]string{"RALPH_AGENT": kind, "RALPH_SANDBOX": "bwrap", "ANTHROPIC_API_KEY": benchAPIKey,
		"ANTHROPIC_BASE_URL": strings.TrimSuffix(model.BaseURL(), "/v1")}
	if bin, ok := agentBinaries[kind]; ok {
		extra["RALPH_AGENT_COMMAND"] = filepath.Join(cfg.CLIDir, bin)
	}
	queue := h.name("agents-" + kind)
	w, err := h.StartWorkerProc(ctx, h.Dev, queue, model.BaseURL(), extra)
	if err != nil {
		return agentRoundTimes{}, err
	}
	defer w.Stop()
	h.logf("agents: %s, %d rounds", kind, cfg.Rounds)
	id := h.name("agents-run")
	run, err := StartRalph(ctx, h.Dev, queue, id, ralphInput{Objective: "a round's fixed cost", MaxRounds: cfg.Rounds, Workspace: id})
	if err != nil {
		return agentRoundTimes{}, err
	}
	firstRunID := run.GetRunID()
	var res workflows.Result
	if err := run.Get(ctx, &res); err != nil {
		return agentRoundTimes{}, fmt.Errorf("run %s: %w", id, err)
	}
	if res.Status != report.OutcomeBudgetLimited || res.RoundsStarted != cfg.Rounds {
		return agentRoundTimes{}, fmt.Errorf("run %s: result %+v, want budget-limited after %d rounds", id, res, cfg.Rounds)
	}
	chain, err := Chain(ctx, h.Dev, id, firstRunID)
	if err != nil {
		return agentRoundTimes{}, err
	}
	return agentTimes(Timing(chain, activities.RunRoundName), filepath.Join(h.Dir, queue, "sessions"), model.Requests())
}

// agentTimes puts each round's history times beside its transcript's and
// the first request that arrived while it ran.
func agentTimes(rt RoundTimes, sessions string, reqs []fakeopenai.Request) (agentRoundTimes, error) {
	var got agentRoundTimes
	for i, started := range rt.Started {
		done := rt.Completed[i]
		marks, err := transcriptMarks(sessions, i+1)
		if err != nil {
			return got, err
		}
		during := requestsBetween(reqs, started, done)
		turn := slices.IndexFunc(during, func(r fakeopenai.Request) bool { return r.OfferedTool("submit_report") != "" })
		if turn < 0 {
			return got, fmt.Errorf("round %d: no request offering the report tool arrived while it ran (%s – %s)", i+1, started, done)
		}
		first := during[0].Time
		got.requests = append(got.requests, len(during))
		got.toFirstRequest = append(got.toFirstRequest, first.Sub(started))
		got.toFirstTurn = append(got.toFirstTurn, during[turn].Time.Sub(started))
		got.sessionToRequest = append(got.sessionToRequest, first.Sub(marks.sessionStart))
		got.reportToEnd = append(got.reportToEnd, done.Sub(marks.accepted))
		got.whole = append(got.whole, done.Sub(started))
	}
	return got, nil
}

// requestsBetween are the requests that arrived between from and to, in
// arrival order.
func requestsBetween(reqs []fakeopenai.Request, from, to time.Time) []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, r := range reqs {
		if r.Time.After(from) && r.Time.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

// spread is "p50 (min–max)" in milliseconds.
func spread(xs []time.Duration) string {
	return fmt.Sprintf("%s (%s–%s)", ms(Median(xs)), ms(Min(xs)), ms(Max(xs)))
}

// roundMarks are the times a round's transcript records.
type roundMarks struct{ sessionStart, accepted time.Time }

// transcriptMarks reads the session start and the accepted report from
// the transcript of round's first attempt under sessions.
func transcriptMarks(sessions string, round int) (roundMarks, error) {
	name := regexp.MustCompile(fmt.Sprintf(`^round-%d-attempt-1-.*\.jsonl$`, round))
	var path string
	err := filepath.WalkDir(sessions, func(p string, d os.DirEntry, err error) error {
		if err == nil && name.MatchString(d.Name()) {
			path = p
		}
		return err
	})
	if err != nil || path == "" {
		return roundMarks{}, fmt.Errorf("round %d: no transcript under %s (%v)", round, sessions, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return roundMarks{}, err
	}
	defer f.Close()
	var m roundMarks
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev agent.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Kind == agent.EventSessionStart:
			m.sessionStart = ev.Time
		case ev.Kind == agent.EventToolResult && ev.Tool == "submit_report" && !ev.Failed:
			m.accepted = ev.Time
		}
	}
	if m.sessionStart.IsZero() || m.accepted.IsZero() {
		return m, fmt.Errorf("%s: no session start or accepted report (%v)", path, sc.Err())
	}
	return m, nil
}
