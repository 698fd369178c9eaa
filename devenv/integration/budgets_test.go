package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// The normative budget examples of docs/reference.md (run budgets), from
// outside: the worker binary, the starter binary, the scripted model. Each
// run must end budget-limited with the budget that constrained it after 2
// or 3 rounds, and the starter's first line names that limit. The rounds
// are long enough to leave work undone and change the workspace, so only
// the budget can end them (the idle budget is the default 3).
func TestRealStackBudgetExamplesThroughTheStarter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		flags     []string
		play      func(tn turn) fakeopenai.Response
		firstLine string
	}{
		// Rounds of about 25 s: a sleeping command, then the report.
		{"time", []string{"--max-minutes", "1"}, sleepyRound, "The run's time budget ran out after "},
		// Rounds of 6,200 tokens: a write (3,100 tokens), then the report (3,100).
		{"tokens", []string{"--max-tokens", "12500"}, costlyRound, "The run's budget of tokens was spent after "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, agentScript(tc.play))
			e.startWorker()
			args := append([]string{"run", "--workspace", "budget-" + tc.name, "--objective", "keep working"}, tc.flags...)
			out, code := runBinary(t, "starter", []string{"TEMPORAL_ADDRESS=" + suite.address,
				"TEMPORAL_NAMESPACE=" + suite.namespace, "RALPH_TASK_QUEUE=" + e.queue}, args...)
			first := firstResultLine(out)
			rounds := roundsIn(first)
			t.Logf("starter %v: exit %d, first line %q", tc.flags, code, first)
			if code != ExitBudgetLimitedCode || !strings.HasPrefix(first, tc.firstLine) || rounds < 2 || rounds > 3 {
				t.Fatalf("starter %v: exit %d, first line %q; want exit 4, %q after 2 or 3 rounds\n%s", tc.flags, code, first, tc.firstLine, out)
			}
		})
	}
}

// ExitBudgetLimitedCode is the starter's exit code for budget-limited.
const ExitBudgetLimitedCode = 4

func sleepyRound(tn turn) fakeopenai.Response {
	if tn.Step() == 0 && len(tn.Chat.Tools) > 1 {
		return tool("run_command", map[string]any{"command": fmt.Sprintf("sleep 25; echo %d > round-%d.txt", tn.Round(), tn.Round())})
	}
	return submit(continueArgs(fmt.Sprintf("round %d slept", tn.Round()), "sleep again"))
}

func costlyRound(tn turn) fakeopenai.Response {
	r := submit(continueArgs(fmt.Sprintf("round %d wrote", tn.Round()), "write more"))
	if tn.Step() == 0 && len(tn.Chat.Tools) > 1 {
		r = tool("write_file", map[string]string{"path": fmt.Sprintf("round-%d.txt", tn.Round()), "content": "work\n"})
	}
	r.Usage = &openai.Usage{PromptTokens: 3000, CompletionTokens: 100}
	return r
}

// firstResultLine is the first line of the starter's result text (after
// the lines it prints while the run goes on).
func firstResultLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "The run's ") || strings.HasPrefix(line, "The idle budget") || strings.HasPrefix(line, "The ") && strings.Contains(line, "-round limit") {
			return line
		}
	}
	return ""
}

var roundsPhrase = regexp.MustCompile(`after (\d+) rounds?`)

func roundsIn(line string) int {
	m := roundsPhrase.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
