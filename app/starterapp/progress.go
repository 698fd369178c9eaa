package starterapp

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/workflows"
)

// waitingNotice is how long a run may give no status before the starter
// says it is waiting for a worker.
const waitingNotice = 5 * time.Second

// progressPrinter turns successive status query answers into one line per
// event: a round started, a round finished with its status and summary.
type progressPrinter struct {
	out        io.Writer
	started    time.Time
	taskQueue  string
	workflowID string
	now        func() time.Time

	announced int // highest round announced as running
	finished  int // highest round whose outcome was printed
	waiting   bool
	paused    bool   // the last answer said paused
	stopSeen  bool   // a stop request was printed
	waitSeen  string // the waitingUntil last printed
}

func (p *progressPrinter) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *progressPrinter) printf(format string, args ...any) {
	d := p.clock().Sub(p.started).Round(time.Second)
	fmt.Fprintf(p.out, "[%02d:%02d] "+format+"\n", append([]any{int(d.Minutes()), int(d.Seconds()) % 60}, args...)...)
}

// update prints what changed since the last answer.
func (p *progressPrinter) update(st workflows.Status, err error) {
	if err != nil {
		if !p.waiting && p.announced == 0 && p.finished == 0 && p.clock().Sub(p.started) >= waitingNotice {
			p.waiting = true
			p.printf("waiting for a worker on task queue %s to pick up the run…", p.taskQueue)
		}
		return
	}
	p.printRounds(st)
	p.printControl(st)
	p.printWait(st)
	if st.Phase == workflows.PhaseRunning && st.Round > p.announced {
		p.printf("round %d/%d running…", st.Round, st.MaxRounds)
		p.announced = st.Round
	}
}

// printRounds prints the rounds finished since the last answer, including
// those of an earlier run of a continue-as-new chain (or left out of the
// status's bounded list), which only the carried report shows.
func (p *progressPrinter) printRounds(st workflows.Status) {
	rounds := append([]workflows.RoundSummary(nil), st.Rounds...)
	sort.Slice(rounds, func(i, j int) bool { return rounds[i].Round < rounds[j].Round })

	if st.LastReport != nil {
		lastDone := st.Round
		if st.Phase == workflows.PhaseRunning {
			lastDone = st.Round - 1
		}
		listed := len(rounds) > 0 && rounds[0].Round <= lastDone
		if lastDone > p.finished && !listed {
			switch from, to := p.finished+1, lastDone-1; {
			case to == from:
				p.printf("round %d/%d finished in an earlier run of this workflow (see its history)", from, st.MaxRounds)
			case to > from:
				p.printf("rounds %d–%d/%d finished in an earlier run of this workflow (see its history)", from, to, st.MaxRounds)
			}
			p.printf("round %d/%d %s: %s", lastDone, st.MaxRounds, st.LastReport.Status, oneLine(st.LastReport.Summary))
			p.finished = lastDone
			p.announced = max(p.announced, lastDone)
		}
	}
	for _, r := range rounds {
		if r.Round <= p.finished {
			continue
		}
		p.printf("round %d/%d %s: %s", r.Round, st.MaxRounds, r.Status, oneLine(r.Summary))
		for _, c := range r.Candidates {
			p.printf("  %s", candidateLine(c))
		}
		p.finished = r.Round
		p.announced = max(p.announced, r.Round)
	}
}

// printControl prints a stop request, a pause and a resume once each.
func (p *progressPrinter) printControl(st workflows.Status) {
	if st.StopRequested && !p.stopSeen {
		p.stopSeen = true
		p.printf("stop requested: the run ends after its running round")
	}
	switch {
	case st.Phase == workflows.PhasePaused && !p.paused && st.WaitingUntil != "":
		p.paused = true
		p.printf("paused while round %d/%d waits for the provider (resume with: starter resume %s)", st.Round, st.MaxRounds, p.workflowID)
	case st.Phase == workflows.PhasePaused && !p.paused:
		p.paused = true
		p.printf("paused before round %d/%d (resume with: starter resume %s)", st.Round+1, st.MaxRounds, p.workflowID)
	case st.Phase != workflows.PhasePaused && p.paused:
		p.paused = false
		p.printf("resumed")
	}
}

// printWait prints a deferred round's wait and the round running again.
func (p *progressPrinter) printWait(st workflows.Status) {
	switch {
	case st.Phase == workflows.PhaseWaiting && st.WaitingUntil != p.waitSeen:
		p.waitSeen = st.WaitingUntil
		p.printf("round %d/%d deferred (provider %s): waiting until %s, then a fresh session runs it again",
			st.Round, st.MaxRounds, st.WaitReason, st.WaitingUntil)
	case st.Phase == workflows.PhaseRunning && p.waitSeen != "":
		p.waitSeen = ""
		p.printf("round %d/%d running again after the wait…", st.Round, st.MaxRounds)
	}
}

// oneLine flattens and bounds a summary for a progress line.
func oneLine(s string) string {
	return clip(strings.Join(strings.Fields(s), " "), 240)
}

// candidateLine is one candidate of a finished round: who ran it, how it
// ended, what it spent, and for the chosen one why.
func candidateLine(c workflows.CandidateSummary) string {
	who := strings.Trim(c.Provider+" "+c.Model, " ")
	if who == "" {
		who = "the worker's agent"
	}
	line := fmt.Sprintf("candidate %d (%s): %s, %d model calls", c.Number, who, c.Outcome, c.Usage.ModelCalls)
	switch {
	case c.Chosen:
		line += "; chosen: " + oneLine(c.Reason)
	case c.Ref != "":
		line += "; kept on " + c.Ref
	case c.Problem != "":
		line += ": " + oneLine(c.Problem)
	}
	return line
}
