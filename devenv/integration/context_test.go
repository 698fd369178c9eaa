package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/report"
)

// Real-stack tests of rounds that end in a hand-off instead of a failure:
// the context budget, the provider's context-length refusal, the round
// time, the loop guard, and reminders counted over consecutive text answers.

// reportOnly reports whether a request offers nothing but submit_report: the
// session forced its hand-off.
func reportOnly(r fakeopenai.Request) bool {
	return len(r.Chat.Tools) == 1 && r.Chat.Tools[0].Function.Name == agent.SubmitReportTool
}

// lastUserText is the newest user message of a request.
func lastUserText(r fakeopenai.Request) string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// handOffThenComplete plays round 1 with work until the session forces its
// hand-off, and completes in round 2.
func handOffThenComplete(work func(tn turn) fakeopenai.Response) fakeopenai.Script {
	return agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() >= 2:
			return submit(completeArgs("finished after the hand-off", "round 2 picked up the hand-off"))
		case reportOnly(tn.Request):
			return submit(continueArgs("handed off at a bound", "pick up from the workspace"))
		default:
			return work(tn)
		}
	})
}

// wantTwoRoundsAfterHandoff runs the test's workflow and checks that round 1
// handed off (continue) and round 2 completed; it returns round 1's requests.
func (e *env) wantTwoRoundsAfterHandoff(id, workspace string) []fakeopenai.Request {
	e.t.Helper()
	res, err := e.result(e.start(id, fmt.Sprintf(`{"objective":"work until a bound","workspace":%q}`, workspace)))
	if err != nil {
		e.t.Fatalf("run failed instead of handing off: %v", err)
	}
	if res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		e.t.Fatalf("result = %+v, want complete after 2 rounds", res)
	}
	st := e.status(id)
	if len(st.Rounds) != 2 || st.Rounds[0].Status != report.StatusContinue {
		e.t.Fatalf("rounds = %+v, want round 1 handing off with continue", st.Rounds)
	}
	var round1 []fakeopenai.Request
	for _, r := range e.model.Requests() {
		if r.Round() == 1 {
			round1 = append(round1, r)
		}
	}
	if len(round1) == 0 || !reportOnly(round1[len(round1)-1]) {
		e.t.Fatalf("round 1's last request does not offer only submit_report")
	}
	e.noKeyAnywhere(id)
	return round1
}

func TestRealStackContextFillsThenHandsOff(t *testing.T) {
	t.Parallel()
	const window = 20000
	script := handOffThenComplete(func(tn turn) fakeopenai.Response {
		return tool("run_command", map[string]any{"command": fmt.Sprintf("head -c 20000 /dev/zero | tr '\\0' x; echo %d", tn.Step())})
	})
	// The scripted provider refuses anything past its window with a 400.
	script.ContextLimit = window
	e := newEnv(t, script, fmt.Sprintf("RALPH_CONTEXT_TOKENS=%d", window))
	e.startWorker()
	round1 := e.wantTwoRoundsAfterHandoff("ctx-fill", "ctx-fill")
	for _, r := range e.model.Requests() {
		if r.PromptTokens() > window {
			t.Errorf("request %d (round %d) has %d tokens, past the window of %d", r.Index, r.Round(), r.PromptTokens(), window)
		}
	}
	last := round1[len(round1)-1]
	if !strings.Contains(lastUserText(last), "your context is nearly full") {
		t.Errorf("hand-off notice = %q", lastUserText(last))
	}
	if len(round1) < 3 {
		t.Errorf("round 1 made %d requests; the outputs should have filled the context over a few calls", len(round1))
	}
}

func TestRealStackContextLengthErrorGetsCompactedRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	refused := false
	e := newEnv(t, handOffThenComplete(func(tn turn) fakeopenai.Response {
		mu.Lock()
		defer mu.Unlock()
		if tn.Step() == 0 {
			return tool("run_command", map[string]any{"command": "echo before-the-refusal"})
		}
		if !refused {
			refused = true
			return fakeopenai.ContextLengthExceeded(fakeopenai.ContextDeepSeek)
		}
		return fakeopenai.Text("the compacted request must come instead")
	}))
	e.startWorker()
	round1 := e.wantTwoRoundsAfterHandoff("ctx-refused", "ctx-refused")
	if len(round1) != 3 {
		t.Fatalf("round 1 made %d requests, want 3 (work, refused, compacted)", len(round1))
	}
	compacted := round1[2]
	if n := len(compacted.Chat.Messages); n != 4 {
		t.Fatalf("compacted request has %d messages, want system, round prompt, a one-line assistant turn and one summary", n)
	}
	text := compacted.Chat.Messages[3].Content
	for _, want := range []string{`- run_command {"command":"echo before-the-refusal"}`, "refused the last request as too long"} {
		if !strings.Contains(text, want) {
			t.Errorf("compacted message lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(string(compacted.Raw), "before-the-refusal\\n") {
		t.Error("the compacted request still carries the tool's output")
	}
}

func TestRealStackRoundTimeoutHandsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, handOffThenComplete(func(tn turn) fakeopenai.Response {
		return tool("run_command", map[string]any{"command": fmt.Sprintf("sleep 4; echo %d", tn.Step())})
	}), "RALPH_ROUND_TIMEOUT_SECONDS=30")
	e.startWorker()
	round1 := e.wantTwoRoundsAfterHandoff("ctx-timeout", "ctx-timeout")
	if notice := lastUserText(round1[len(round1)-1]); !strings.Contains(notice, "the time of this round is nearly spent") {
		t.Errorf("hand-off notice = %q", notice)
	}
}

func TestRealStackRepeatedCallHandsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, handOffThenComplete(func(tn turn) fakeopenai.Response {
		return tool("run_command", map[string]any{"command": "echo again >> repeats.txt"})
	}))
	e.startWorker()
	round1 := e.wantTwoRoundsAfterHandoff("ctx-loop", "ctx-loop")
	if notice := lastUserText(round1[len(round1)-1]); !strings.Contains(notice, fmt.Sprintf("identical arguments %d times", agent.RepeatHandoffAfter)) {
		t.Errorf("hand-off notice = %q", notice)
	}
	data, err := os.ReadFile(filepath.Join(e.root, "ctx-loop", "repeats.txt"))
	if err != nil || strings.Count(string(data), "again") != agent.RepeatWarnAfter-1 {
		t.Errorf("repeats.txt = %q, %v; want the command run %d times", data, err, agent.RepeatWarnAfter-1)
	}
}

func TestRealStackTextEveryOtherStepKeepsAllTools(t *testing.T) {
	t.Parallel()
	const steps = 10
	e := newEnv(t, agentScript(func(tn turn) fakeopenai.Response {
		switch {
		case tn.Round() >= 2:
			return submit(completeArgs("done", "round 1 kept working"))
		case tn.Step() >= steps:
			return submit(continueArgs("worked between text answers", "finish"))
		case tn.Step()%2 == 0:
			return fakeopenai.Text("Thinking about what to do next.")
		default:
			return tool("run_command", map[string]any{"command": fmt.Sprintf("echo step %d >> steps.txt", tn.Step())})
		}
	}))
	e.startWorker()
	res, err := e.result(e.start("ctx-text", `{"objective":"alternate text and tools","workspace":"ctx-text"}`))
	if err != nil || res.Status != report.OutcomeComplete || res.RoundsStarted != 2 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	want := []string{"list_files", "read_file", "write_file", "edit_file", "search_files", "run_command", "submit_report"}
	n := 0
	for _, r := range e.model.Requests() {
		if r.Round() != 1 {
			continue
		}
		n++
		var got []string
		for _, tl := range r.Chat.Tools {
			got = append(got, tl.Function.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("round 1 request at step %d offers %v, want every tool", r.Step(), got)
		}
	}
	if n != steps+1 {
		t.Errorf("round 1 made %d requests, want %d", n, steps+1)
	}
	data, _ := os.ReadFile(filepath.Join(e.root, "ctx-text", "steps.txt"))
	if c := strings.Count(string(data), "step"); c != steps/2 {
		t.Errorf("steps.txt has %d lines, want %d", c, steps/2)
	}
}
